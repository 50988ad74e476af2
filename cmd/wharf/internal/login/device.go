package login

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/wharfhub/wharf/cmd/wharf/internal/tokencache"
)

// DeviceCodePrefix starts the line Device prints the user code on.
const DeviceCodePrefix = "Enter the code "

// Device runs the device authorization grant: it prints where to go and
// the code to enter, then polls the token endpoint until the user
// approves, refuses or the code expires.
func (o OIDC) Device(ctx context.Context, out io.Writer) (tokencache.Entry, error) {
	c, err := o.client(ctx)
	if err != nil {
		return tokencache.Entry{}, err
	}
	if c.conf.Endpoint.DeviceAuthURL == "" {
		return tokencache.Entry{}, errors.New("the IdP does not support the device flow (no device_authorization_endpoint); log in without --device")
	}
	da, err := c.conf.DeviceAuth(o.ctx(ctx))
	if err != nil {
		return tokencache.Entry{}, fmt.Errorf("starting the device flow: %w", redact(err))
	}
	fmt.Fprintf(out, "To log in, open %s\n%s%s\n", da.VerificationURI, DeviceCodePrefix, da.UserCode)
	if da.VerificationURIComplete != "" {
		fmt.Fprintf(out, "or open %s\n", da.VerificationURIComplete)
	}
	tok, err := c.conf.DeviceAccessToken(o.ctx(ctx), da)
	if err != nil {
		return tokencache.Entry{}, fmt.Errorf("waiting for device approval: %w", redact(err))
	}
	return o.entry(ctx, c, tok, "")
}
