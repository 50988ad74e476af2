package proxy

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

func TestCacheAssetLargeBodyStreamsUntagged(t *testing.T) {
	body := bytes.Repeat([]byte("x"), maxHashedAsset+10)
	req, _ := http.NewRequest(http.MethodGet, "http://provider/ui/big.js", nil)
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	if err := cacheAsset(resp); err != nil {
		t.Fatal(err)
	}
	if e := resp.Header.Get("ETag"); e != "" {
		t.Errorf("ETag %q on an unbounded body", e)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("body changed: %d bytes, %v", len(got), err)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != assetCacheControl {
		t.Errorf("Cache-Control %q", cc)
	}
}

func TestEtagMatches(t *testing.T) {
	tests := []struct {
		inm, etag string
		want      bool
	}{
		{"", `"a"`, false},
		{`"a"`, `"a"`, true},
		{`W/"a"`, `"a"`, true},
		{`"a"`, `W/"a"`, true},
		{`"b", "a"`, `"a"`, true},
		{`*`, `"a"`, true},
		{`"b"`, `"a"`, false},
	}
	for _, tc := range tests {
		if got := etagMatches(tc.inm, tc.etag); got != tc.want {
			t.Errorf("etagMatches(%q, %q) = %v", tc.inm, tc.etag, got)
		}
	}
}
