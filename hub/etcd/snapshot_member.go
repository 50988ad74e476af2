package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"
	"google.golang.org/grpc/status"
)

// healthKey is what a member check reads, as etcdctl endpoint health
// does; whether it exists does not matter.
const healthKey = "health"

// defaultMemberCheckTimeout bounds one member's check when the config sets
// no DialTimeout.
const defaultMemberCheckTimeout = 10 * time.Second

// NoMemberError is SaveSnapshot's error when no member could be saved:
// each endpoint's cause, in the order the endpoints were given.
type NoMemberError struct {
	Endpoints []string
	Causes    []error
}

func (e *NoMemberError) Error() string {
	var b strings.Builder
	b.WriteString("no etcd member could be saved")
	same := len(e.Causes) > 1
	for _, c := range e.Causes[1:] {
		same = same && c.Error() == e.Causes[0].Error()
	}
	if same {
		// One cause for all (a wrong CA file, say) is said once.
		fmt.Fprintf(&b, " (%s): %v", strings.Join(e.Endpoints, ", "), e.Causes[0])
		return b.String()
	}
	for i, ep := range e.Endpoints {
		fmt.Fprintf(&b, "; %s: %v", ep, e.Causes[i])
	}
	return b.String()
}

// Unwrap gives the members' causes to errors.Is and errors.As.
func (e *NoMemberError) Unwrap() []error { return e.Causes }

type memberResult struct {
	endpoint string
	err      error
}

// saveFromLiveMember saves the snapshot of one member of cfg.Endpoints
// into file and returns its etcd version. etcd's snapshot API streams one
// member's own copy of the store (clientv3/snapshot refuses several
// endpoints), so the member must be chosen. All members are checked at
// once; the first to pass is saved, and if its stream breaks, the next to
// pass. A member passes when it answers a linearizable read, which only a
// member in quorum can, and only once it has applied everything committed
// before the read: its snapshot then holds every write acknowledged before
// the save began. Members that are down, cut off from the quorum, or
// refuse the client's TLS, fail the check and are passed over.
func saveFromLiveMember(ctx context.Context, cfg clientv3.Config, file string) (string, error) {
	if len(cfg.Endpoints) == 0 {
		return "", errors.New("no etcd endpoint given")
	}
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = defaultMemberCheckTimeout
	}
	// Checks still running when a save has succeeded are cancelled.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan memberResult, len(cfg.Endpoints))
	for _, ep := range cfg.Endpoints {
		go func() { results <- memberResult{ep, checkMember(ctx, oneMember(cfg, ep), timeout)} }()
	}
	causes := make(map[string]error, len(cfg.Endpoints))
	for range cfg.Endpoints {
		r := <-results
		if r.err == nil {
			version, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), oneMember(cfg, r.endpoint), file)
			if err == nil {
				return version, nil
			}
			r.err = fmt.Errorf("streaming the snapshot: %w", describe(err))
		}
		causes[r.endpoint] = r.err
	}
	e := &NoMemberError{Endpoints: cfg.Endpoints}
	for _, ep := range cfg.Endpoints {
		e.Causes = append(e.Causes, causes[ep])
	}
	return "", e
}

// oneMember is cfg for the member at endpoint alone, logging nothing:
// the etcd client's retry warnings would bury the command's own error.
func oneMember(cfg clientv3.Config, endpoint string) clientv3.Config {
	cfg.Endpoints = []string{endpoint}
	cfg.Logger = zap.NewNop()
	// A client that syncs endpoints would wander to other members.
	cfg.AutoSyncInterval = 0
	return cfg
}

// checkMember is nil when the member cfg names answers a linearizable
// read within timeout; otherwise it is the cause, found within another
// timeout.
func checkMember(parent context.Context, cfg clientv3.Config, timeout time.Duration) error {
	err := readOnce(parent, cfg, timeout)
	if err == nil {
		return nil
	}
	// The client retried until the deadline, which is all it reports:
	// connect once more to find out what went wrong.
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	if cause := diagnose(ctx, cfg.Endpoints[0], cfg.TLS); cause != nil {
		return cause
	}
	if parent.Err() != nil {
		return describe(err)
	}
	// Connection and TLS are fine, yet no answer: a member without quorum
	// holds linearizable reads until it has one.
	return fmt.Errorf("the member is reachable but did not answer a quorum read within %s (it may have lost its quorum): %w", timeout, describe(err))
}

func readOnce(parent context.Context, cfg clientv3.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.Get(ctx, healthKey)
	// With etcd auth on, a user without read access to the key is told so
	// by a member that did answer: that member is live.
	if errors.Is(err, rpctypes.ErrPermissionDenied) {
		return nil
	}
	return err
}

// describe turns a gRPC error into its message, which carries the cause
// (the TLS verification failure, the refused connection), without the
// status code wrapping around it; the error stays in the chain.
func describe(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Message() == "" {
		return err
	}
	return &causeError{msg: st.Message(), err: err}
}

type causeError struct {
	msg string
	err error
}

func (e *causeError) Error() string { return e.msg }
func (e *causeError) Unwrap() error { return e.err }
