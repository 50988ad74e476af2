package edgesbench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
	"github.com/wharfhub/wharf/test/bench/benchkit"
	"github.com/wharfhub/wharf/test/sshd"
)

// runSSH joins a server edge with a real wharf-agent in front of the sshd
// fixture and reads a file of mb MB with `cat`, through `wharf ssh` (the
// system ssh with wharf ssh-proxy as ProxyCommand, host key pinned from
// status.sshHostKey) and with the system ssh straight to the sshd on
// loopback, runs times each, interleaved.
func runSSH(ctx context.Context, e *env, sd *sshd.Server, work string, mb, runs int) (*SSH, error) {
	const name = "web-1"
	s := &SSH{Bytes: int64(mb) * 1e6}
	file := filepath.Join(work, "payload")
	if err := writeRandom(file, s.Bytes); err != nil {
		return nil, err
	}
	if err := e.createEdgeServer(ctx, name); err != nil {
		return nil, err
	}
	bundle, err := e.bundle(ctx, name, v1alpha1.TypeServer)
	if err != nil {
		return nil, err
	}
	benchkit.Progress("ssh: starting wharf-agent for server edge %s (sshd %s)", name, sd.Addr)
	a, err := startAgent(e, filepath.Join(work, "agent-"+name), bundle, "--ssh-addr", sd.Addr)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	if _, err := waitReady(ctx, e, a, name); err != nil {
		return nil, err
	}
	kc := filepath.Join(work, "hub.kubeconfig")
	if err := e.writeUserKubeconfig(kc); err != nil {
		return nil, err
	}
	direct := func() *exec.Cmd {
		return exec.CommandContext(ctx, "ssh", append(sd.SSHArgs(""), "127.0.0.1", "cat", file)...)
	}
	tunnel := func() *exec.Cmd {
		return exec.CommandContext(ctx, filepath.Join(e.binDir, "wharf"), "ssh", name,
			"--kubeconfig", kc, "-w", wsPath, "-l", sd.User, "-i", sd.ClientKey,
			"-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "--", "cat", file)
	}
	for i := range runs {
		benchkit.Progress("ssh: run %d/%d, %d MB each way", i+1, runs, mb)
		order := []string{"direct", "tunnel"}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, which := range order {
			mk := direct
			if which == "tunnel" {
				mk = tunnel
			}
			d, err := timeCat(mk(), s.Bytes)
			if err != nil {
				if which == "tunnel" {
					err = a.annotate(err)
				}
				return nil, fmt.Errorf("ssh %s: %w", which, err)
			}
			if which == "direct" {
				s.Direct = append(s.Direct, d)
			} else {
				s.Tunnel = append(s.Tunnel, d)
			}
		}
	}
	return s, nil
}

// timeCat runs cmd and returns the time from its first byte on stdout to
// its last, so the connection set-up (ssh's handshake and, through the
// edge, the CLI's edge lookup and websocket dial) is not counted as
// transfer. It fails unless exactly want bytes arrive and cmd exits 0.
func timeCat(cmd *exec.Cmd, want int64) (time.Duration, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	stderr := &capped{max: 4096}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	buf := make([]byte, 256<<10)
	var n int64
	var first time.Time
	for {
		k, rerr := out.Read(buf)
		if k > 0 && n == 0 {
			first = time.Now()
		}
		n += int64(k)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			_ = cmd.Wait()
			return 0, rerr
		}
	}
	last := time.Now()
	if err := cmd.Wait(); err != nil {
		return 0, fmt.Errorf("%w: %s", err, stderr.b)
	}
	if n != want {
		return 0, fmt.Errorf("read %d bytes, want %d: %s", n, want, stderr.b)
	}
	return last.Sub(first), nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	max int
	b   []byte
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// writeRandom writes n random bytes to path: incompressible, so neither
// side gains from compression.
func writeRandom(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, rand.Reader, n); err != nil {
		f.Close()
		return fmt.Errorf("payload: %w", err)
	}
	return f.Close()
}

// createEdgeServer creates a server edge.
func (e *env) createEdgeServer(ctx context.Context, name string) error {
	return e.createEdge(ctx, name, v1alpha1.TypeServer)
}

// writeUserKubeconfig writes benchUser's hub kubeconfig (the shape wharf
// login leaves: server <hub>/clusters/<workspace>, the hub CA, a token).
func (e *env) writeUserKubeconfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: e.hub.URL() + "/clusters/" + wsPath, CertificateAuthorityData: e.caPEM}
	cfg.AuthInfos[benchUser] = &clientcmdapi.AuthInfo{Token: benchToken}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: benchUser}
	cfg.CurrentContext = "hub"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("hub kubeconfig: %w", err)
	}
	return nil
}
