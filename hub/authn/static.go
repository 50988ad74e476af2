package authn

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/authentication/user"
)

// StaticTokens authenticates the generated admin token as admin, then the
// tokens of the CSV tokenFile (token,user,uid,"group1,group2") if one is
// named. The admin token comes first so that a token file cannot rebind it.
func StaticTokens(adminToken string, admin user.Info, tokenFile string) (authenticator.Token, error) {
	tokens := []authenticator.Token{}
	if adminToken != "" {
		tokens = append(tokens, tokenfile.New(map[string]*user.DefaultInfo{
			adminToken: {Name: admin.GetName(), UID: admin.GetUID(), Groups: admin.GetGroups(), Extra: admin.GetExtra()},
		}))
	}
	if tokenFile != "" {
		f, err := tokenfile.NewCSV(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("loading token file %s: %w", tokenFile, err)
		}
		tokens = append(tokens, withoutEmptyGroups(f))
	}
	return tokenunion.New(tokens...), nil
}

// withoutEmptyGroups drops the empty group upstream's CSV reader makes of an
// empty groups field (`token,user,uid,""`): it names no group, and the
// provider proxy rightly refuses to assert an empty group name.
func withoutEmptyGroups(delegate authenticator.Token) authenticator.Token {
	return authenticator.TokenFunc(func(ctx context.Context, token string) (*authenticator.Response, bool, error) {
		resp, ok, err := delegate.AuthenticateToken(ctx, token)
		if !ok || err != nil || resp == nil || resp.User == nil || !slices.Contains(resp.User.GetGroups(), "") {
			return resp, ok, err
		}
		u := &user.DefaultInfo{Name: resp.User.GetName(), UID: resp.User.GetUID(), Extra: resp.User.GetExtra()}
		for _, g := range resp.User.GetGroups() {
			if g != "" {
				u.Groups = append(u.Groups, g)
			}
		}
		return &authenticator.Response{User: u, Audiences: resp.Audiences}, true, nil
	})
}
