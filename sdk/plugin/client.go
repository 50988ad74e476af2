package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// DefaultStartTimeout bounds the go-plugin handshake when neither
// Options.StartTimeout nor the context's deadline says otherwise.
const DefaultStartTimeout = 30 * time.Second

// socketName is the file the plugin listens on inside the socket directory.
const socketName = "http.sock"

// maxSocketPath is the portable limit for sun_path (104 on BSDs, 108 on
// Linux), checked up front so the failure names the path.
const maxSocketPath = 103

// maxMessage bounds a single control message from the plugin.
const maxMessage = 64 << 20

// Options describes how the hub launches one provider binary.
type Options struct {
	// Path is the provider binary.
	Path string
	// Args are extra command-line arguments.
	Args []string
	// Env is added to the plugin's environment, overriding the hub's.
	Env []string
	// IsolateEnv starts the plugin without the hub's environment (only Env
	// and go-plugin's handshake variables), so hub secrets held in
	// environment variables do not leak into provider processes.
	IsolateEnv bool
	// Checksum, when set, is the binary's expected SHA-256; a mismatch
	// refuses to start it. See ParseChecksum.
	Checksum []byte
	// SocketDir is the directory for the plugin's HTTP socket. It must exist
	// with mode 0700. Empty means a private temporary directory that the
	// Client creates and removes on Kill.
	SocketDir string
	// StartTimeout bounds launch and handshake. Zero means the context's
	// deadline, or DefaultStartTimeout.
	StartTimeout time.Duration
	// Stderr receives the plugin's stderr and stdout as complete lines:
	// one line, ending in a newline, per Write, never two Writes at once.
	// The hub can log each Write as one entry. Nil discards the output.
	Stderr io.Writer
}

// Client is the hub's handle on one running provider process.
type Client struct {
	gp         *goplugin.Client
	srv        Server
	cmd        *exec.Cmd
	socketPath string
	ownDir     string // removed on Kill when we created it
	streams    []*lineWriter
	killOnce   sync.Once
}

// ParseChecksum accepts "sha256:<hex>" or bare hex, the forms the hub's
// --provider flag takes.
func ParseChecksum(s string) ([]byte, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "sha256:")
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("checksum: %w", err)
	}
	if len(b) != sha256.Size {
		return nil, fmt.Errorf("checksum: want %d bytes of SHA-256, got %d", sha256.Size, len(b))
	}
	return b, nil
}

// Launch starts the provider binary, completes the go-plugin handshake and
// returns a Client. The plugin is not serving HTTP until Start. The context
// bounds the handshake only through its deadline; go-plugin offers no
// cancellation hook there.
func Launch(ctx context.Context, opts Options) (*Client, error) {
	if opts.Path == "" {
		return nil, errors.New("launch: empty plugin path")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch %s: %w", opts.Path, err)
	}
	c := &Client{}
	dir := opts.SocketDir
	if dir == "" {
		d, err := os.MkdirTemp("", "wharf-prov-")
		if err != nil {
			return nil, fmt.Errorf("launch %s: socket dir: %w", opts.Path, err)
		}
		dir, c.ownDir = d, d
	} else if err := checkPrivateDir(dir); err != nil {
		return nil, fmt.Errorf("launch %s: %w", opts.Path, err)
	}
	c.socketPath = filepath.Join(dir, socketName)
	if len(c.socketPath) > maxSocketPath {
		c.cleanup()
		return nil, fmt.Errorf("launch %s: socket path %q longer than %d bytes", opts.Path, c.socketPath, maxSocketPath)
	}

	cmd := exec.Command(opts.Path, opts.Args...)
	// Order matters: later entries win, so opts.Env overrides the hub's
	// environment. go-plugin appends only its handshake variables after
	// these (SkipHostEnv below stops it re-appending os.Environ()). The
	// go-plugin control socket goes into the same private directory as the
	// HTTP socket: whoever can reach it can Stop the provider.
	if !opts.IsolateEnv {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(append(cmd.Env, opts.Env...), goplugin.EnvUnixSocketDir+"="+dir)
	// Own process group, so Kill reaches everything the plugin spawned; on
	// Linux also die with the hub.
	cmd.SysProcAttr = procAttr()
	c.cmd = cmd

	out := opts.Stderr
	if out == nil {
		out = io.Discard
	}
	outMu := &sync.Mutex{}
	c.streams = []*lineWriter{{outMu: outMu, out: out}, {outMu: outMu, out: out}, {outMu: outMu, out: out}}
	cfg := &goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          pluginMap(nil),
		Cmd:              cmd,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     startTimeout(ctx, opts.StartTimeout),
		Stderr:           c.streams[0],
		SyncStderr:       c.streams[1],
		SyncStdout:       c.streams[2],
		// go-plugin's own logger would duplicate every stderr line; errors
		// reach the hub as return values instead.
		Logger: hclog.NewNullLogger(),
		// Describe carries every CRD's full schema; 4 MiB (gRPC's default)
		// is within reach of a provider with many large CRDs.
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage))},
	}
	if len(opts.Checksum) > 0 {
		cfg.SecureConfig = &goplugin.SecureConfig{Checksum: opts.Checksum, Hash: sha256.New()}
	}
	c.gp = goplugin.NewClient(cfg)

	rpc, err := c.gp.Client()
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("launch %s: %w", opts.Path, err)
	}
	raw, err := rpc.Dispense(PluginName)
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("launch %s: dispense: %w", opts.Path, err)
	}
	srv, ok := raw.(Server)
	if !ok {
		c.Kill()
		return nil, fmt.Errorf("launch %s: dispensed %T, not a provider", opts.Path, raw)
	}
	c.srv = srv
	return c, nil
}

func startTimeout(ctx context.Context, d time.Duration) time.Duration {
	if d <= 0 {
		d = DefaultStartTimeout
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < d {
			d = max(left, time.Millisecond)
		}
	}
	return d
}

// checkPrivateDir enforces the 0700 rule: the socket carries trusted
// identity headers, so nobody but the hub's user may reach it.
func checkPrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket dir %s: not a directory", dir)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("socket dir %s: mode %o, want 0700", dir, perm)
	}
	return nil
}

// SocketPath is the unix socket the plugin serves HTTP on after Start.
func (c *Client) SocketPath() string { return c.socketPath }

// Pid is the plugin's process id (also its process group id), or 0.
func (c *Client) Pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Exited reports whether the plugin process has exited.
func (c *Client) Exited() bool { return c.gp.Exited() }

// Describe asks the plugin for its manifest and validates it.
func (c *Client) Describe(ctx context.Context) (*Descriptor, error) {
	d, err := c.srv.Describe(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	return d, nil
}

// Start configures the plugin and makes it serve on SocketPath. The socket
// path in cfg is always the one this Client named.
func (c *Client) Start(ctx context.Context, cfg Config) error {
	cfg.SocketPath = c.socketPath
	return c.srv.Start(ctx, &cfg)
}

// Health pings the plugin. An error wrapping ErrUnhealthy means the plugin
// answered and reported itself sick; any other error means it did not answer.
func (c *Client) Health(ctx context.Context) error { return c.srv.Health(ctx) }

// Stop asks the plugin to run its stop hook and close its socket. The
// process keeps running until Kill.
func (c *Client) Stop(ctx context.Context) error { return c.srv.Stop(ctx) }

// Close is the polite shutdown: Stop, then Kill. Stop's error is returned
// but never prevents the kill.
func (c *Client) Close(ctx context.Context) error {
	var err error
	if !c.Exited() {
		err = c.Stop(ctx)
	}
	c.Kill()
	return err
}

// Kill ends the plugin: go-plugin's graceful close with its short grace
// period, then SIGKILL to the whole process group so children die too. It
// waits for the process to be reaped and is safe to call more than once.
func (c *Client) Kill() {
	c.killOnce.Do(func() {
		c.gp.Kill()
		if pid := c.Pid(); pid > 0 {
			killGroup(pid)
		}
		// go-plugin has stopped relaying output; keep a last partial line
		// (often the reason for a crash).
		for _, s := range c.streams {
			s.Flush()
		}
		c.cleanup()
	})
}

func (c *Client) cleanup() {
	if c.ownDir != "" {
		_ = os.RemoveAll(c.ownDir)
	}
}
