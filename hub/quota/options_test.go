package quota

import (
	"testing"

	"github.com/spf13/pflag"
)

// Byte ceilings follow the store's quota unless a flag set them.
func TestFitToStore(t *testing.T) {
	for _, tc := range []struct {
		name               string
		args               []string
		quota              int64
		wantWS, wantTenant int64
	}{
		{"8 GiB store keeps the defaults", nil, 8 << 30, 256 << 20, 1 << 30},
		{"256 MiB store shrinks them", nil, 256 << 20, 8 << 20, 32 << 20},
		{"unknown quota keeps the defaults", nil, 0, 256 << 20, 1 << 30},
		{"flags win", []string{"--max-workspace-bytes=100000000", "--max-tenant-bytes=200000000"}, 256 << 20, 100000000, 200000000},
		{"an explicit default wins too", []string{"--max-tenant-bytes=1073741824"}, 256 << 20, 8 << 20, 1 << 30},
		{"0 stays unbounded", []string{"--max-workspace-bytes=0", "--max-tenant-bytes=0"}, 256 << 20, 0, 0},
		{"a larger store never raises them", nil, 64 << 30, 256 << 20, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			o.FitToStore(tc.quota)
			if o.Workspace.Bytes != tc.wantWS || o.Tenant.Bytes != tc.wantTenant {
				t.Fatalf("workspace %d tenant %d, want %d %d", o.Workspace.Bytes, o.Tenant.Bytes, tc.wantWS, tc.wantTenant)
			}
		})
	}
}
