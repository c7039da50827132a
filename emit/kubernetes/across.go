package kubernetes

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
)

// Every object a server's manifest makes, and every one it reads, is
// named after the server ("<server>-egress-proxy", "<server>-to-egress-proxy",
// "<server>-<target>" for a claim): two servers of one policy, applied to
// one namespace, can be given one name ("a" and "a-to" both make
// NetworkPolicy a-to-egress-proxy; "a" mounting /b/workspace and "a-b"
// mounting /workspace both read claim a-b-workspace). The later apply
// then replaces the other's object, or the two share a volume.

// objectNames are the plan's objects by "Kind/name", each "makes" or
// "reads".
func objectNames(p *compiler.Plan) (map[string]string, error) {
	objs, err := Objects(p, compiler.Placeholders{}, Options{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, obj := range objs {
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		md, _ := m["metadata"].(map[string]any)
		out[fmt.Sprint(m["kind"], "/", md["name"])] = "makes"
		refs(m, out)
	}
	return out, nil
}

// refs adds the Secrets, ConfigMaps and claims v reads, anywhere in it.
func refs(v any, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			m, _ := x.(map[string]any)
			switch {
			case m == nil:
			case k == "secretKeyRef" || k == "configMapKeyRef":
				kind := map[string]string{"secretKeyRef": "Secret", "configMapKeyRef": "ConfigMap"}[k]
				out[fmt.Sprint(kind, "/", m["name"])] = "reads"
			case k == "secret":
				out[fmt.Sprint("Secret/", m["secretName"])] = "reads"
			case k == "configMap":
				out[fmt.Sprint("ConfigMap/", m["name"])] = "reads"
			case k == "persistentVolumeClaim":
				out[fmt.Sprint("PersistentVolumeClaim/", m["claimName"])] = "reads"
			}
			refs(x, out)
		}
	case []any:
		for _, x := range v {
			refs(x, out)
		}
	}
}

// CheckAcross refuses servers of one policy built for the kubernetes
// backend whose manifests make or read an object of one kind and name.
func CheckAcross(plans []*compiler.Plan) error {
	type owner struct {
		p   *compiler.Plan
		how string
	}
	seen := map[string]owner{}
	told := map[[2]*compiler.Plan]bool{} // one error per pair of servers
	var errs []error
	for _, p := range plans {
		names, err := objectNames(p)
		if err != nil {
			continue // the plan's own error is reported where it is built
		}
		keys := make([]string, 0, len(names))
		for k := range names {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			o, dup := seen[k]
			if !dup {
				seen[k] = owner{p, names[k]}
				continue
			}
			if o.p == p || told[[2]*compiler.Plan{o.p, p}] {
				continue
			}
			told[[2]*compiler.Plan{o.p, p}] = true
			errs = append(errs, &emit.NotEnforceableError{Pos: p.Pos, Field: p.Field(), Server: p.Server, Backend: Backend,
				Restriction: fmt.Sprintf("a manifest that %s %s, which server %q (%s) %s too (applied in one namespace, one would replace the other's or share it)",
					names[k], strings.Replace(k, "/", " ", 1), o.p.Server, o.p.Pos, o.how),
				Alternative: "rename one of the servers: the kubernetes backend names every object after its server"})
		}
	}
	return errors.Join(errs...)
}
