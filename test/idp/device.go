package idp

import (
	"context"
	"fmt"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"
)

// deviceStorage adds the device authorization grant to storage; op offers
// the grant only when its storage implements op.DeviceAuthorizationStorage,
// so Options.DeviceFlow picks between the two types.
type deviceStorage struct{ *storage }

var _ op.DeviceAuthorizationStorage = deviceStorage{}

type deviceAuth struct {
	userCode string
	state    op.DeviceAuthorizationState
}

func (s deviceStorage) StoreDeviceAuthorization(_ context.Context, clientID, deviceCode, userCode string, expires time.Time, scopes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devices {
		if d.userCode == userCode {
			return op.ErrDuplicateUserCode
		}
	}
	s.devices[deviceCode] = &deviceAuth{userCode: userCode, state: op.DeviceAuthorizationState{
		ClientID: clientID, Scopes: scopes, Expires: expires,
	}}
	return nil
}

func (s deviceStorage) GetDeviceAuthorizatonState(_ context.Context, clientID, deviceCode string) (*op.DeviceAuthorizationState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[deviceCode]
	if !ok || d.state.ClientID != clientID {
		return nil, fmt.Errorf("device code %w", errNotFound)
	}
	st := d.state
	if st.Done {
		// A device code yields tokens once.
		delete(s.devices, deviceCode)
	}
	return &st, nil
}

// approveDevice completes the device authorization with userCode as
// username, as the user's browser would after logging in.
func (s *storage) approveDevice(userCode, username string) error {
	u, ok := s.userByName(username)
	if !ok {
		return fmt.Errorf("user %q %w", username, errNotFound)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devices {
		if d.userCode == userCode && !d.state.Done && time.Now().Before(d.state.Expires) {
			d.state.Done, d.state.Subject, d.state.AuthTime, d.state.AMR = true, u.Subject, time.Now(), []string{"pwd"}
			return nil
		}
	}
	return fmt.Errorf("pending user code %w", errNotFound)
}
