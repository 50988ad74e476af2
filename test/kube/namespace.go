package kube

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateNamespace creates namespace name (if absent) with the "default"
// ServiceAccount a controller manager would have added, so pods can be
// created there under the ServiceAccount admission plugin.
func (c *Cluster) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	cs := c.Clientset(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kube fixture: create namespace %s: %v", name, err)
	}
	c.EnsureServiceAccount(t, name, "default")
}

// EnsureServiceAccount creates ServiceAccount namespace/name if absent; with
// no controllers running nothing else does.
func (c *Cluster) EnsureServiceAccount(t testing.TB, namespace, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	if err := ensureServiceAccount(ctx, c, namespace, name); err != nil {
		t.Fatalf("kube fixture: %v", err)
	}
}

func ensureServiceAccount(ctx context.Context, c *Cluster, namespace, name string) error {
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	_, err = cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create serviceaccount %s/%s: %w", namespace, name, err)
	}
	return nil
}
