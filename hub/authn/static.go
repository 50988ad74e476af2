package authn

import (
	"fmt"

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
		tokens = append(tokens, f)
	}
	return tokenunion.New(tokens...), nil
}
