// Package bootstrap creates the files a first start needs in the data dir:
// the admin token, the admin kubeconfig and the self-signed serving
// certificate (ECDSA P-256, servingcert.go), written where the apiserver's
// own SecureServingOptions then finds it instead of generating an RSA one.
//
// Everything here is created once and reused, so restarting on the same data
// dir keeps the same credentials and the same trust root.
package bootstrap

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// LoadOrCreateToken returns the token stored at path, creating a random
// 256-bit token there (mode 0600) on first use.
//
// The token is the hub administrator's, so a stored one is believed only
// if the hub could have written it: a regular file (not a symlink) of the
// hub's own user that nobody else may read or write. Otherwise whoever
// could plant a file in the data dir before the first start (a data dir
// under /tmp, a restore into a path someone else made) would know the
// admin token.
func LoadOrCreateToken(path string) (string, error) {
	b, err := readPrivate(path)
	if err == nil {
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("token file %s is empty", path)
		}
		return tok, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading token: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generating token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	// O_EXCL: if another process raced us, fail rather than overwrite the
	// token it may already have handed out.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("creating token file: %w", err)
	}
	defer f.Close()
	if _, err := f.WriteString(tok + "\n"); err != nil {
		return "", fmt.Errorf("writing token: %w", err)
	}
	return tok, nil
}

// readPrivate reads path if it is a regular file of this process's user
// with no group or other permission bits, without following a symlink.
func readPrivate(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("token file %s is a symlink: refusing it", path)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token file %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token file %s must be a regular file of uid %d with mode 0600 (it is %v, uid %d): "+
			"refusing a token someone else may have written; remove it to have a new one made", path, os.Geteuid(), fi.Mode(), st.Uid)
	}
	return io.ReadAll(f)
}

// RootCA returns the self-signed root at the end of a PEM certificate chain,
// or nil when the chain ends in a certificate issued by someone else (an
// operator-provided cert, trusted through the system roots instead).
func RootCA(chainPEM []byte) ([]byte, error) {
	var last *pem.Block
	rest := chainPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			last = b
		}
	}
	if last == nil {
		return nil, fmt.Errorf("no certificate in chain")
	}
	c, err := x509.ParseCertificate(last.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	if !c.IsCA || !bytes.Equal(c.RawIssuer, c.RawSubject) {
		return nil, nil
	}
	return pem.EncodeToMemory(last), nil
}

// Kubeconfig describes the admin kubeconfig.
type Kubeconfig struct {
	Server string // https://host:port/clusters/root
	CAData []byte // nil: trust the system roots
	Token  string
}

// WriteKubeconfig writes (or rewrites) a kubeconfig with one context,
// "wharf-root", mode 0600.
func WriteKubeconfig(path string, k Kubeconfig) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["wharf"] = &clientcmdapi.Cluster{Server: k.Server, CertificateAuthorityData: k.CAData}
	cfg.AuthInfos["wharf-admin"] = &clientcmdapi.AuthInfo{Token: k.Token}
	cfg.Contexts["wharf-root"] = &clientcmdapi.Context{Cluster: "wharf", AuthInfo: "wharf-admin"}
	cfg.CurrentContext = "wharf-root"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	return os.Chmod(path, 0o600)
}
