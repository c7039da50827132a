package clientcfg

import (
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
)

// ReadManifest reads a hand-written Kubernetes manifest (a Pod, or a
// workload's Pod template) into lint targets, one per container, with the
// positions of the fields that widen it (see emit/kubernetes/parse.go).
// Its hostPath sources are a node's paths, judged as written.
func ReadManifest(file string, src []byte) ([]*readback.Target, error) {
	return kubernetes.ParseManifest(file, src, looksLikeSecret)
}
