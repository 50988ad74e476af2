package login

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wharfhub/wharf/hub/etcd"
)

// store keeps the server-side half of login in etcd, shared by all hub
// replicas: used state ids (single use) and per-session records (the
// refresh token, and the proof that the session was not logged out).
// Every key has a lease, so nothing outlives the state or session it
// belongs to.
type store struct {
	c *clientv3.Client
	// w retries the store's writes across an etcd member or leader
	// failure, so that a login does not fail then.
	w      *etcd.Writer
	prefix string
	// tokens seals refresh tokens at rest: etcd readers (backups) do not
	// get IdP credentials.
	tokens sealer
}

// record is what etcd holds for a live session.
type record struct {
	// RefreshToken is sealed with store.tokens, bound to the session id.
	RefreshToken string `json:"rt,omitempty"`
	// Current is the latest sealed session cookie value, so that a request
	// that lost a refresh race can adopt the winner's result.
	Current string `json:"cur,omitempty"`
}

func newStore(c *clientv3.Client, prefix string, secret []byte) (*store, error) {
	t, err := newSealer(secret, "refresh token at rest")
	if err != nil {
		return nil, err
	}
	return &store{c: c, w: etcd.NewWriter(c), prefix: path.Join(prefix, "wharf.dev", "login"), tokens: t}, nil
}

func (s *store) stateKey(id string) string   { return path.Join(s.prefix, "states", id) }
func (s *store) sessionKey(id string) string { return path.Join(s.prefix, "sessions", id) }

// leaseFor grants a lease lasting until until (at least a second).
func (s *store) leaseFor(ctx context.Context, until time.Time) (clientv3.LeaseID, error) {
	ttl := int64(time.Until(until).Seconds()) + 1
	if ttl < 2 {
		ttl = 2
	}
	var id clientv3.LeaseID
	err := s.w.Do(ctx, "grant", func(ctx context.Context) error {
		l, err := s.c.Grant(ctx, ttl)
		if err == nil {
			id = l.ID
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("granting lease: %w", err)
	}
	return id, nil
}

// consumeState marks a state id used. It returns false if it was used
// before, on this replica or another: create-if-absent in one etcd
// transaction, so two concurrent callbacks cannot both win.
func (s *store) consumeState(ctx context.Context, id string, until time.Time) (bool, error) {
	lease, err := s.leaseFor(ctx, until)
	if err != nil {
		return false, err
	}
	key := s.stateKey(id)
	// A retry after an ambiguous failure finds the state used if the first
	// attempt applied; the key is then on this call's own fresh lease,
	// which tells it apart from a replay.
	resp, err := s.w.Txn(ctx, key, func(t clientv3.Txn) clientv3.Txn {
		return t.If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, "used", clientv3.WithLease(lease)))
	}, etcd.ValueIs(key, []byte("used"), lease))
	if err != nil {
		return false, fmt.Errorf("recording login state: %w", err)
	}
	if !resp.Succeeded {
		_, _ = s.c.Revoke(ctx, lease)
	}
	return resp.Succeeded, nil
}

// sealToken seals a refresh token for session id.
func (s *store) sealToken(id, token string) (string, error) {
	if token == "" {
		return "", nil
	}
	return s.tokens.seal([]byte(token), []byte("session "+id))
}

func (s *store) openToken(id, sealed string) (string, error) {
	if sealed == "" {
		return "", nil
	}
	b, err := s.tokens.open(sealed, []byte("session "+id))
	return string(b), err
}

// createSession stores the record of a new session until its expiry.
func (s *store) createSession(ctx context.Context, id string, rec record, until time.Time) error {
	lease, err := s.leaseFor(ctx, until)
	if err != nil {
		return err
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding session record: %w", err)
	}
	if _, err := s.w.Put(ctx, s.sessionKey(id), string(body), clientv3.WithLease(lease)); err != nil {
		return fmt.Errorf("storing session: %w", err)
	}
	return nil
}

var errNoSession = errors.New("session ended")

// getSession returns the record and its revision; errNoSession when the
// session was logged out or expired.
func (s *store) getSession(ctx context.Context, id string) (record, int64, error) {
	resp, err := s.c.Get(ctx, s.sessionKey(id))
	if err != nil {
		return record{}, 0, fmt.Errorf("reading session: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return record{}, 0, errNoSession
	}
	var rec record
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return record{}, 0, fmt.Errorf("decoding session record: %w", err)
	}
	return rec, resp.Kvs[0].ModRevision, nil
}

// updateSession replaces the record if it is still at revision rev,
// keeping its lease. It returns false if someone else changed or deleted
// it first.
func (s *store) updateSession(ctx context.Context, id string, rev int64, rec record) (bool, error) {
	body, err := json.Marshal(rec)
	if err != nil {
		return false, fmt.Errorf("encoding session record: %w", err)
	}
	key := s.sessionKey(id)
	// Only this put can be the first change after rev if it applied: the
	// key's history resolves an ambiguous first attempt.
	resp, err := s.w.Txn(ctx, key, func(t clientv3.Txn) clientv3.Txn {
		return t.If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, string(body), clientv3.WithIgnoreLease()))
	}, etcd.FirstChangeIs(key, rev, body))
	if err != nil {
		return false, fmt.Errorf("updating session: %w", err)
	}
	return resp.Succeeded, nil
}

// deleteSession ends a session on every replica at once.
func (s *store) deleteSession(ctx context.Context, id string) error {
	if _, err := s.w.Delete(ctx, s.sessionKey(id)); err != nil {
		return fmt.Errorf("deleting session: %w", err)
	}
	return nil
}
