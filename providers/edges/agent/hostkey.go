package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// errScanned ends the host-key scan's handshake once the key is known: the
// agent never authenticates to sshd, it only reads the key sshd presents.
var errScanned = errors.New("host key recorded")

// scanHostKey returns the host key that the sshd at addr presents, in
// authorized_keys form without the trailing newline. The CLI later checks
// the session's host key against it, end to end.
func scanHostKey(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("ssh host key of %s: %w", addr, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	var key ssh.PublicKey
	cfg := &ssh.ClientConfig{
		User: "wharf-agent-host-key-scan",
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			key = k
			return errScanned
		},
	}
	_, _, _, err = ssh.NewClientConn(c, addr, cfg)
	if key == nil {
		if err == nil {
			err = errors.New("no host key")
		}
		return "", fmt.Errorf("ssh host key of %s: %w", addr, err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))), nil
}
