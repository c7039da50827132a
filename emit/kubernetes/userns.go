package kubernetes

import "github.com/mcpolicy/mcpolicy/compiler"

// AcceptHostUsers is the degradation a policy accepts to run the backend's
// Pods in the node's user namespace: without it every Pod (the server's
// and its egress proxy's) says hostUsers: false, so that uid 1000 in the
// Pod is an unprivileged uid of its own on the node, owning nothing there
// (and a container escape lands as nobody). A node whose runtime, kernel
// or volumes cannot give a Pod its own user namespace refuses to start
// such a Pod; a cluster whose API server lacks the feature drops the
// field (the Pod then shares the node's, as with the degradation).
const AcceptHostUsers = "kubernetes-host-users"

// hostUsers is the Pods' hostUsers field: false unless the plan accepts
// AcceptHostUsers, then left out (the API's default, the node's namespace).
func hostUsers(p *compiler.Plan) *bool {
	if p.Accepts(AcceptHostUsers) {
		return nil
	}
	f := false
	return &f
}
