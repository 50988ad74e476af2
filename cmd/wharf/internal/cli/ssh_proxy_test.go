package cli

import (
	"bytes"
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	edgesv1 "github.com/wharfhub/wharf/providers/edges/apis/v1alpha1"
)

// tunnelServer is a TLS websocket endpoint standing in for the edges
// provider's /ssh egress: it requires the bearer token want and echoes
// every binary frame back, then closes when the client does.
func tunnelServer(t *testing.T, want string) *httptest.Server {
	t.Helper()
	up := websocket.Upgrader{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+want || r.Header.Get("X-Wharf-Workspace") != "abcdefghij012345" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"edges.edges.wharf.dev \"lab\" is forbidden","reason":"Forbidden","code":403}`)
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(mt, bytes.ToUpper(b)); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func tunnelConn(t *testing.T, srv *httptest.Server, user func(*clientcmdapi.AuthInfo)) (*hubConn, *edgesv1.Edge) {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c, err := hubFlags{kubeconfig: writeKubeconfig(t, func(cl *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
		cl.Server, cl.CertificateAuthorityData = srv.URL+"/clusters/root", ca
		if user != nil {
			user(u)
		}
	})}.connect()
	if err != nil {
		t.Fatal(err)
	}
	e := testEdge(edgesv1.TypeServer)
	e.Status.URL = srv.URL + "/services/providers/edges/edgeproxy/clusters/abcdefghij012345/apis/edges.wharf.dev/v1alpha1/edges/lab/ssh"
	return c, e
}

// TestSSHProxyPipes: bytes from stdin reach the tunnel as frames and come
// back on stdout; stdin's EOF ends the session cleanly.
func TestSSHProxyPipes(t *testing.T) {
	srv := tunnelServer(t, "secret-token")
	c, e := tunnelConn(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := dialEdgeSSH(ctx, c, e)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := pipeWebsocket(ctx, conn, strings.NewReader("ssh-2.0-hello"), &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "SSH-2.0-HELLO" {
		t.Fatalf("stdout %q", out.String())
	}
}

// TestSSHProxyExecCredential: an exec-plugin user (as "wharf login"
// writes) authenticates the websocket through the rest transport wrappers.
func TestSSHProxyExecCredential(t *testing.T) {
	srv := tunnelServer(t, "exec-token")
	plugin := filepath.Join(t.TempDir(), "cred")
	script := "#!/bin/sh\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exec-token\"}}'\n"
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c, e := tunnelConn(t, srv, func(u *clientcmdapi.AuthInfo) {
		u.Token = ""
		u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: plugin, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := dialEdgeSSH(ctx, c, e)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := pipeWebsocket(ctx, conn, strings.NewReader("x"), &out); err != nil || out.String() != "X" {
		t.Fatalf("out %q err %v", out.String(), err)
	}
}

// TestSSHProxyRefused: a refusal arrives as kubectl would print it.
func TestSSHProxyRefused(t *testing.T) {
	srv := tunnelServer(t, "another-token")
	c, e := tunnelConn(t, srv, nil)
	_, err := dialEdgeSSH(context.Background(), c, e)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want Forbidden", err)
	}
	if got := Message(err); got != `Error from server (Forbidden): edges.edges.wharf.dev "lab" is forbidden` {
		t.Fatalf("message %q", got)
	}
}
