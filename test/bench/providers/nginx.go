package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"text/template"
	"time"
)

// nginxConf is a reverse proxy tuned the way one would for this job: TLS on
// loopback like the hub, keep-alive to the client and a keep-alive pool to
// the upstream socket, no access log (the hub keeps none either).
var nginxConf = template.Must(template.New("nginx").Parse(`daemon off;
worker_processes auto;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path {{.Dir}}/body;
  proxy_temp_path {{.Dir}}/proxy;
  fastcgi_temp_path {{.Dir}}/fastcgi;
  uwsgi_temp_path {{.Dir}}/uwsgi;
  scgi_temp_path {{.Dir}}/scgi;
  keepalive_requests 1000000;
  upstream bench { server unix:{{.Socket}}; keepalive 128; }
  server {
    listen 127.0.0.1:{{.Port}} ssl;
    ssl_certificate {{.Dir}}/tls.crt;
    ssl_certificate_key {{.Dir}}/tls.key;
    location / {
      proxy_pass http://bench;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`))

// nginxBinary finds nginx on PATH or where Debian installs it (/usr/sbin
// is not on every user's PATH).
func nginxBinary() (string, error) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", nil
	}
	return "", errors.New("nginx not found: install the Debian package nginx (make bench does)")
}

// startNginx runs nginx in the foreground with a config in dir, proxying
// 127.0.0.1:port to the unix socket. It serves the certificate and key at
// certFile and keyFile (copied into dir). Run as root, it drops to nobody:
// the benchmark needs no privilege.
func startNginx(ctx context.Context, dir, socket, certFile, keyFile string) (port, pid int, stop func(), err error) {
	bin, err := nginxBinary()
	if err != nil {
		return 0, 0, nil, err
	}
	if port, err = freePort(); err != nil {
		return 0, 0, nil, err
	}
	for src, dst := range map[string]string{certFile: "tls.crt", keyFile: "tls.key"} {
		b, err := os.ReadFile(src)
		if err != nil {
			return 0, 0, nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o600); err != nil {
			return 0, 0, nil, err
		}
	}
	conf := filepath.Join(dir, "nginx.conf")
	f, err := os.Create(conf)
	if err != nil {
		return 0, 0, nil, err
	}
	err = nginxConf.Execute(f, map[string]any{"Dir": dir, "Socket": socket, "Port": port})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, 0, nil, err
	}
	cmd := exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		if err := giveTo(dir, 65534, 65534); err != nil {
			return 0, 0, nil, err
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	out, err := os.Create(filepath.Join(dir, "nginx.out"))
	if err != nil {
		return 0, 0, nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return 0, 0, nil, fmt.Errorf("start nginx: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(exited) }()
	stop = func() {
		// The master is the group leader; QUIT is its graceful stop.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			outb, _ := os.ReadFile(filepath.Join(dir, "nginx.out"))
			return 0, 0, nil, fmt.Errorf("nginx exited: %s%s", outb, log)
		case <-ctx.Done():
			stop()
			return 0, 0, nil, ctx.Err()
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return port, cmd.Process.Pid, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return 0, 0, nil, errors.New("nginx did not listen within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// giveTo makes dir and everything in it owned by uid:gid.
func giveTo(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
