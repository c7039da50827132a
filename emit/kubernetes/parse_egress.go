package kubernetes

import (
	"net"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// What a workload's Pod may reach, read off the NetworkPolicies of the
// file as a CNI reads them: the union of the egress rules of every policy
// selecting the Pod, in its namespace, when one of them restricts egress.
// A policy whose selector cannot be read here (matchExpressions) is taken
// to select the Pod for what it allows, never for what it denies. Egress
// only to the Pods of the file that run `mcpolicy egress-proxy` is the
// allowlist those proxies are given (--allow); any other egress rule opens
// the network.

// podEgress is a Pod's egress: "none", "allowlist" (Allow, through the
// proxy named by Via) or "open" (Why, at Node).
type podEgress struct {
	Mode  string
	Allow []compiler.Destination
	Via   string
	Why   string
	Node  *yaml.Node
}

// egressOf reads the Pod's egress (workload is its document, labels and
// namespace its Pod's).
func egressOf(docs []*yaml.Node, workload *yaml.Node, pos func(*yaml.Node) position.Pos) podEgress {
	labels := podLabels(workload)
	ns := str(get(workload, "metadata", "namespace"))
	restricted := false
	var rules []*yaml.Node
	var ruleOf []string
	for _, d := range docs {
		if str(get(d, "kind")) != "NetworkPolicy" || str(get(d, "metadata", "namespace")) != ns {
			continue
		}
		spec := get(d, "spec")
		match, sure := selectorMatches(get(spec, "podSelector"), labels)
		if !match {
			continue
		}
		egressType := false
		if types := get(spec, "policyTypes"); types != nil {
			for _, t := range types.Content {
				egressType = egressType || t.Value == "Egress"
			}
		} else {
			egressType = get(spec, "egress") != nil // the API's default
		}
		restricted = restricted || sure && egressType
		if eg := get(spec, "egress"); eg != nil {
			for _, r := range eg.Content {
				rules = append(rules, r)
				ruleOf = append(ruleOf, str(get(d, "metadata", "name")))
			}
		}
	}
	switch {
	case !restricted:
		return podEgress{Mode: "open", Why: "pod network without a deny-egress NetworkPolicy"}
	case len(rules) == 0:
		return podEgress{Mode: "none"}
	}
	out := podEgress{Mode: "allowlist"}
	var vias []string
	for i, r := range rules {
		proxies := proxiesOf(docs, ns, get(r, "to"))
		if proxies == nil {
			return podEgress{Mode: "open", Why: "pod network: NetworkPolicy " + ruleOf[i] + " allows egress", Node: r}
		}
		for _, px := range proxies {
			if !slices.Contains(vias, px.what) {
				vias = append(vias, px.what)
				for _, a := range px.allow {
					out.Allow = append(out.Allow, compiler.Destination{Rule: a.rule, Pos: pos(a.node)})
				}
			}
		}
		out.Node = r
	}
	out.Via = strings.Join(vias, ", ")
	return out
}

// podLabels are the labels of the workload's Pod.
func podLabels(workload *yaml.Node) *yaml.Node {
	if str(get(workload, "kind")) == "Pod" {
		return get(workload, "metadata", "labels")
	}
	if str(get(workload, "kind")) == "CronJob" {
		return get(workload, "spec", "jobTemplate", "spec", "template", "metadata", "labels")
	}
	return get(workload, "spec", "template", "metadata", "labels")
}

// selectorMatches reports whether a podSelector selects the labels, and
// whether that is sure (matchExpressions are not read: a selector with
// them matches, unsure).
func selectorMatches(sel, labels *yaml.Node) (match, sure bool) {
	if ml := get(sel, "matchLabels"); ml != nil {
		for i := 0; i+1 < len(ml.Content); i += 2 {
			if str(get(labels, ml.Content[i].Value)) != ml.Content[i+1].Value {
				return false, true
			}
		}
	}
	return true, get(sel, "matchExpressions") == nil
}

// egressProxy is a workload of the file running mcpolicy egress-proxy.
type egressProxy struct {
	what  string // Kind/name
	allow []struct {
		rule allowlist.Rule
		node *yaml.Node
	}
}

// proxiesOf returns the egress proxies a rule's peers select, nil unless
// every peer selects only such Pods (by podSelector, in the namespace).
func proxiesOf(docs []*yaml.Node, ns string, to *yaml.Node) []egressProxy {
	if to == nil || len(to.Content) == 0 {
		return nil // to everywhere
	}
	var out []egressProxy
	for _, peer := range to.Content {
		sel := get(peer, "podSelector")
		if ml := get(sel, "matchLabels"); ml == nil || len(ml.Content) == 0 || get(peer, "namespaceSelector") != nil ||
			get(peer, "ipBlock") != nil || get(sel, "matchExpressions") != nil {
			return nil
		}
		found := false
		for _, d := range docs {
			spec, what, ok := podSpecOf(d)
			if !ok || str(get(d, "metadata", "namespace")) != ns {
				continue
			}
			if match, _ := selectorMatches(sel, podLabels(d)); !match {
				continue
			}
			px, ok := proxyOf(spec, what)
			if !ok {
				return nil // the peer selects a Pod that is no egress proxy
			}
			out, found = append(out, px), true
		}
		if !found {
			return nil
		}
	}
	return out
}

// proxyOf reads a Pod spec running `mcpolicy egress-proxy` in its one
// container, and the --allow entries it is given.
func proxyOf(spec *yaml.Node, what string) (egressProxy, bool) {
	cs := get(spec, "containers")
	if cs == nil || len(cs.Content) != 1 || get(spec, "initContainers") != nil {
		return egressProxy{}, false
	}
	var argv []*yaml.Node
	for _, key := range []string{"command", "args"} {
		if seq := get(cs.Content[0], key); seq != nil {
			argv = append(argv, seq.Content...)
		}
	}
	if len(argv) < 2 || path.Base(argv[0].Value) != "mcpolicy" || argv[1].Value != "egress-proxy" {
		return egressProxy{}, false
	}
	px := egressProxy{what: what}
	for i := 2; i < len(argv); i++ {
		v, has := argv[i].Value, false
		if rest, ok := strings.CutPrefix(v, "--allow="); ok {
			v, has = rest, true
		} else if v == "--allow" && i+1 < len(argv) {
			i++
			v, has = argv[i].Value, true
		}
		if !has {
			continue
		}
		r, err := allowlist.ParseRule(v)
		if err != nil {
			return egressProxy{}, false // an entry not read: its reach is unknown
		}
		px.allow = append(px.allow, struct {
			rule allowlist.Rule
			node *yaml.Node
		}{r, argv[i]})
	}
	return px, true
}

// proxyWiring reports whether name=value is one of the variables that
// point a server at the egress proxy (sandbox.ProxyEnv, the proxy's
// address in the URLs): configuration written in the manifest, no grant.
func proxyWiring(name, value string) bool {
	for _, kv := range sandbox.ProxyEnv(0) {
		if kv[0] != name {
			continue
		}
		if !strings.HasPrefix(kv[1], "http://") {
			return value == kv[1]
		}
		hostPort, ok := strings.CutPrefix(value, "http://")
		host, port, err := net.SplitHostPort(hostPort)
		n, perr := strconv.Atoi(port)
		return ok && err == nil && perr == nil && n > 0 && n < 1<<16 && host != "" && !strings.ContainsAny(host, "@/?#")
	}
	return false
}
