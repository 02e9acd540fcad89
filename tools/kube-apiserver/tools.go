//go:build tools

// Package tools keeps the servers' main packages in this module's requirements (go mod tidy).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
