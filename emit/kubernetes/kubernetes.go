// Package kubernetes emits, per server, Kubernetes manifests built from
// typed objects (internal/kube: the fields of the k8s.io/api types it
// writes, held to them by the tests): the server as a Pod (or a
// Deployment's Pod template) with every subtraction of the plan in its
// securityContext, and NetworkPolicies that deny all traffic but, for an
// egress allowlist, the way to the egress-proxy Pod emitted beside the
// server (`mcpolicy egress-proxy`, behind a Service). Nothing is templated
// as text: a field the types do not have cannot be written, and a value
// cannot change the structure of the YAML.
//
// Each mount is a PersistentVolumeClaim by default (ClaimName names it;
// Options.Claims overrides it), so that every emitted Pod passes Pod
// Security "restricted". A hostPath volume of the node's files is only on
// explicit opt-in (Options.HostPath): it needs a privileged namespace, and
// lint flags it as a grant. A hostPath source keeps the placeholders of the
// other backends (${PROJECT_ROOT}, ${HOME}); the committed file keeps
// ${MCPOLICY_EGRESS_PROXY_IP} for the egress proxy's Service address and
// ${MCPOLICY_IMAGE} for its image unless Options names them: substitute
// them before `kubectl apply`.
package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes/internal/kube"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	names "github.com/mcpolicy/mcpolicy/internal/backendtraits"
)

// Backend is the name used in artefact paths and messages.
const Backend = names.Kubernetes

// Labels mcpolicy puts on what it emits. A label value is at most 63
// characters, so the plan label carries the first 32 hex digits of the
// plan hash (128 bits); the manifest's header carries the whole
// "sha256:…" and how to attach. There is no annotation: podman 4's kube
// play, the local stand-in for a kubelet, refuses a Pod with an annotation
// value longer than 63 characters, which both of those can be.
const (
	LabelServer     = "org.mcpolicy.server"
	LabelRole       = "org.mcpolicy.role"
	LabelPlan       = "org.mcpolicy.plan"
	RoleServer      = "server"
	RoleEgressProxy = "egress-proxy"
)

// ProxyImagePlaceholder stands for the egress-proxy Pod's image unless
// Options.ProxyImage names one: an image holding a static mcpolicy at
// ProxyBinary. It is no image reference a node could pull: a manifest
// applied without substituting it fails (InvalidImageName), it never pulls
// a tag nobody built.
const ProxyImagePlaceholder = "${MCPOLICY_IMAGE}"

// ProxyBinary is where the egress-proxy Pod's image holds mcpolicy.
const ProxyBinary = "/usr/local/bin/mcpolicy"

// ProxyUser is the uid and gid the egress proxy runs as: not the server's
// (the proxy is mcpolicy, not the server), non-root, and owning nothing in
// the image (distroless' "nonroot").
const ProxyUser = 65532

// The egress-proxy Pod's resources, its own whatever the server's limits:
// it parses what the internet and the server send it, so it is bounded
// like any parser facing them. The memory limit holds the proxy at its
// connection bound (egress.DefaultMaxConns, 256, each with two 32 KiB copy
// buffers and up to about 320 KiB of parsed headers: some 96 MiB live),
// with room for Go's collector to let the heap double; the CPU limit
// throttles, never kills. Requests are what an idle proxy relaying a
// session's API calls uses.
const (
	proxyMemoryLimit     = 256 << 20
	proxyMemoryRequest   = 64 << 20
	proxyMilliCPULimit   = 500
	proxyMilliCPURequest = 50
)

func proxyResources() kube.ResourceRequirements {
	return kube.ResourceRequirements{
		Limits: kube.ResourceList{kube.ResourceMemory: kube.BinarySI(proxyMemoryLimit),
			kube.ResourceCPU: kube.MilliDecimalSI(proxyMilliCPULimit)},
		Requests: kube.ResourceList{kube.ResourceMemory: kube.BinarySI(proxyMemoryRequest),
			kube.ResourceCPU: kube.MilliDecimalSI(proxyMilliCPURequest)},
	}
}

// EgressProxyIPPlaceholder stands for the egress proxy Service's cluster IP
// in committed artefacts, unless Options.EgressProxyIP names one. The
// server reaches the proxy by address, never by name: it is given no DNS.
const EgressProxyIPPlaceholder = "${MCPOLICY_EGRESS_PROXY_IP}"

// Kinds of workload Options.Kind selects.
const (
	KindPod        = "Pod"
	KindDeployment = "Deployment"
)

// EnvSource says where a granted variable's value comes from in the
// cluster: a key of a Secret (the default) or of a ConfigMap, by name.
// The manifest never holds a value.
type EnvSource struct {
	ConfigMap bool   // a ConfigMap instead of a Secret
	Name      string // the object's name; default "<server>-env"
	Key       string // the key; default the variable's name
}

// Options are what a cluster adds to the plan; none of them widens it.
type Options struct {
	// Kind is KindPod (the default) or KindDeployment.
	Kind string
	// Namespace of every object; empty leaves it to kubectl's context.
	Namespace string
	// Claims maps a mount's target to the PersistentVolumeClaim backing
	// it, instead of the default ClaimName(server, target) (the policy has
	// no field for claims yet). The claim must hold what the mount's
	// source holds; readOnly follows the plan.
	Claims map[string]string
	// HostPath backs the mounts without a claim in Options.Claims by
	// hostPath volumes of the node's files (the plan's sources) instead of
	// claims. Opt-in only: Pod Security "baseline" and "restricted" refuse
	// hostPath, so the Pod needs a privileged namespace, and a hostPath is
	// a grant of the node's files that lint flags.
	HostPath bool
	// Env maps a granted variable to its source; a variable not listed
	// reads key NAME of Secret "<server>-env".
	Env map[string]EnvSource
	// EgressProxyIP is the cluster IP the egress proxy's Service is given
	// and the server's HTTPS_PROXY names (EgressProxyIPPlaceholder if empty).
	EgressProxyIP string
	// ProxyImage is the egress-proxy Pod's image, holding a static
	// mcpolicy at ProxyBinary (ProxyImagePlaceholder if empty).
	ProxyImage string
	// DNSNamespace and DNSLabels select the cluster DNS the egress proxy
	// (never the server) may query: default namespace kube-system, pods
	// labelled k8s-app=kube-dns.
	DNSNamespace string
	DNSLabels    map[string]string
	// ClusterCIDRs are the cluster's Pod and Service ranges, excepted from
	// what the egress proxy's NetworkPolicy lets it reach where they lie
	// outside the private ranges it excepts already (PrivateRanges): public
	// addresses used privately, an IPv6 cluster on global addresses.
	ClusterCIDRs []string
}

func (o Options) kind() string {
	if o.Kind == "" {
		return KindPod
	}
	return o.Kind
}

// maskedDirs may be writable under readOnlyRootFilesystem: /dev/shm in
// every CRI runtime (the sandbox's shm), /tmp and /var/tmp in runtimes that
// add a tmpfs there (podman run does). An empty read-only volume over each
// makes them agree on "nothing writable", as the docker backend's read-only
// tmpfs masks do. Not /run: runtimes mount files into it (podman and CRI-O
// /run/.containerenv, CRI-O /run/secrets), which a read-only mask makes
// fail, and none of them adds a writable tmpfs there for a Pod (podman 4.3
// kube play: /run is read-only, checked by TestPodmanKubePlay).
var maskedDirs = []string{"/dev/shm", "/tmp", "/var/tmp"}

// Volume names. The emptyDirs are named after the server: podman 4's kube
// play makes an emptyDir a named volume of the engine under its name,
// shared by every Pod played at the same time with the same one (in a
// cluster a volume's name is its Pod's own). The double dash keeps them
// apart from every claim ClaimName makes, which podman names volumes
// after too: no ClaimName holds "--".
func volMask(p *compiler.Plan) string    { return p.Server + "--mask" }
func volScratch(p *compiler.Plan) string { return p.Server + "--scratch" }

func volMount(i int) string { return "mount-" + strconv.Itoa(i) }

// maskSize bounds the read-only mask though nothing can write it.
var maskSize = kube.BinarySI(4 << 10) // 4Ki

// userError is a plan this backend cannot express at all.
func userError(p *compiler.Plan, msg, hint string) error {
	return &emit.NotEnforceableError{Pos: p.UserPos, Field: p.Field("user"),
		Server: p.Server, Backend: Backend, Restriction: msg, Alternative: hint}
}

// Check reports whether the plan can be emitted: nil, or why not (a
// *emit.NotEnforceableError for a restriction the backend cannot enforce).
func Check(p *compiler.Plan) error {
	_, err := Manifest(p, compiler.Placeholders{}, Options{})
	return err
}

// check refuses what no manifest can carry, then what the backend cannot
// enforce.
func check(p *compiler.Plan, o Options) error {
	if errs := kube.IsDNS1123Label(p.Server); len(errs) > 0 {
		return fmt.Errorf("%s: %s: server %q: the kubernetes backend names objects after the server, and %s",
			p.Pos, p.Field(), p.Server, strings.Join(errs, "; "))
	}
	if len(p.Server) > 63-len("-egress-proxy") {
		return fmt.Errorf("%s: %s: server %q: names longer than %d characters do not fit Kubernetes object names",
			p.Pos, p.Field(), p.Server, 63-len("-egress-proxy"))
	}
	if p.Image == "" {
		return &emit.NotEnforceableError{Pos: p.Pos, Field: p.Field(),
			Server: p.Server, Backend: Backend, Restriction: "a server without an image",
			Alternative: `set "image" in the policy: a Pod runs an image`}
	}
	for i, m := range p.Mounts {
		// The inner mount is the outer volume at a subPath, which the
		// kubelet resolves following symlinks inside the volume: the server
		// can replace the inner folder with a link to ../.git, and the next
		// start binds .git read-write there (escape suite:
		// k8s-symlink-inside-volume). No launcher runs in a cluster to
		// refuse the link, so the plan is refused.
		if j, _, ok := writableAncestor(p, i); ok && m.Mode == compiler.ReadWrite {
			return &emit.NotEnforceableError{Pos: m.Pos, Field: p.Field("mounts"), Server: p.Server, Backend: Backend,
				Restriction: fmt.Sprintf("a read-write mount (%s) inside another read-write mount (%s)", m.Target, p.Mounts[j].Target),
				Alternative: "the server could swap the inner folder for a symlink to a protected entry (.git) of the outer volume, bound read-write at the next start: mount only the outer folder, or make the inner mount read-only"}
		}
	}
	switch o.kind() {
	case KindPod, KindDeployment:
	default:
		return fmt.Errorf("kubernetes: kind %q: want %s or %s", o.Kind, KindPod, KindDeployment)
	}
	for target := range o.Claims {
		if !slices.ContainsFunc(p.Mounts, func(m compiler.Mount) bool { return m.Target == target }) {
			return fmt.Errorf("server %q: a claim for %s, which is no mount target of the plan", p.Server, target)
		}
	}
	for name, src := range o.Env {
		if !slices.Contains(p.EnvNames(), name) {
			return fmt.Errorf("server %q: an env source for %s, which the plan does not grant", p.Server, name)
		}
		if src.Name != "" {
			if errs := kube.IsDNS1123Subdomain(src.Name); len(errs) > 0 {
				return fmt.Errorf("server %q: env %s: object name %q: %s", p.Server, name, src.Name, strings.Join(errs, "; "))
			}
		}
		if src.Name == CredentialsSecret(p.Server) && !src.ConfigMap {
			return fmt.Errorf("server %q: env %s: Secret %s holds the credentials' values and the session CA's key, the egress-proxy Pod's alone: the server's Pod never reads it", p.Server, name, src.Name)
		}
		if src.Key != "" {
			if errs := kube.IsConfigMapKey(src.Key); len(errs) > 0 {
				return fmt.Errorf("server %q: env %s: key %q: %s", p.Server, name, src.Key, strings.Join(errs, "; "))
			}
		}
	}
	if o.Namespace != "" {
		if errs := kube.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return fmt.Errorf("kubernetes: namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
	if o.EgressProxyIP != "" {
		if _, err := netip.ParseAddr(o.EgressProxyIP); err != nil {
			return fmt.Errorf("kubernetes: egress proxy IP %q: %v", o.EgressProxyIP, err)
		}
	}
	if o.ProxyImage != "" {
		if err := emit.CheckSafe(p.Server, "egress proxy image", o.ProxyImage); err != nil {
			return err
		}
	}
	if err := checkClusterCIDRs(o); err != nil {
		return err
	}
	if o.DNSNamespace != "" {
		if errs := kube.IsDNS1123Label(o.DNSNamespace); len(errs) > 0 {
			return fmt.Errorf("kubernetes: DNS namespace %q: %s", o.DNSNamespace, strings.Join(errs, "; "))
		}
	}
	for k, v := range o.DNSLabels {
		if errs := append(kube.IsQualifiedName(k), kube.IsValidLabelValue(v)...); len(errs) > 0 {
			return fmt.Errorf("kubernetes: DNS label %s=%s: %s", k, v, strings.Join(errs, "; "))
		}
	}
	if len(p.Credentials) > 0 {
		for _, m := range p.Mounts {
			if m.Target == sandbox.Dir || strings.HasPrefix(m.Target, sandbox.Dir+"/") {
				return &emit.NotEnforceableError{Pos: m.Pos, Field: p.Field("mounts"), Server: p.Server, Backend: Backend,
					Restriction: fmt.Sprintf("a mount at %s with credentials", m.Target),
					Alternative: "the session CA the server trusts is mounted at " + sandbox.Dir + ": mount elsewhere"}
			}
		}
	}
	if err := emit.RefuseHomeTargets(p, Backend, "a Pod has no home of the user who starts the server"); err != nil {
		return err
	}
	return emit.Check(p, Backend, Enforcement(p))
}

// labels select the server's Pod.
func serverLabels(p *compiler.Plan) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       p.Server,
		"app.kubernetes.io/managed-by": "mcpolicy",
		LabelServer:                    p.Server,
		LabelRole:                      RoleServer,
	}
}

// selector is the subset of the labels that NetworkPolicies and the
// Deployment select on: it never changes with the plan.
func serverSelector(p *compiler.Plan) map[string]string {
	return map[string]string{LabelServer: p.Server, LabelRole: RoleServer}
}

// EgressProxyLabels are the labels the egress-proxy Pod of the server must
// carry: its Service and the NetworkPolicies select it by them.
func EgressProxyLabels(server string) map[string]string {
	return map[string]string{LabelServer: server, LabelRole: RoleEgressProxy}
}

func planLabel(hash string) string {
	h := strings.TrimPrefix(hash, "sha256:")
	if len(h) > 32 {
		h = h[:32]
	}
	return h
}

func meta(p *compiler.Plan, o Options, name string, labels map[string]string) kube.ObjectMeta {
	l := map[string]string{}
	for k, v := range labels {
		l[k] = v
	}
	if p.Hash != "" {
		l[LabelPlan] = planLabel(p.Hash)
	}
	return kube.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: l}
}

// Pod returns the server's Pod. Host paths are rendered by r.
func Pod(p *compiler.Plan, r compiler.Resolver, o Options) (*kube.Pod, error) {
	if err := check(p, o); err != nil {
		return nil, err
	}
	spec, err := podSpec(p, r, o, kube.RestartPolicyNever)
	if err != nil {
		return nil, err
	}
	return &kube.Pod{
		TypeMeta:   kube.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: meta(p, o, p.Server, serverLabels(p)),
		Spec:       spec,
	}, nil
}

// Deployment returns the server as a Deployment of one replica, recreated
// (never two instances on the same read-write mounts), whose Pod restarts
// after each session: stdin closes when the client detaches.
func Deployment(p *compiler.Plan, r compiler.Resolver, o Options) (*kube.Deployment, error) {
	if err := check(p, o); err != nil {
		return nil, err
	}
	spec, err := podSpec(p, r, o, kube.RestartPolicyAlways)
	if err != nil {
		return nil, err
	}
	one := int32(1)
	tm := meta(p, o, "", serverLabels(p))
	tm.Namespace = ""
	return &kube.Deployment{
		TypeMeta:   kube.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(p, o, p.Server, serverLabels(p)),
		Spec: kube.DeploymentSpec{
			Replicas: &one,
			Selector: &kube.LabelSelector{MatchLabels: serverSelector(p)},
			Strategy: kube.DeploymentStrategy{Type: kube.RecreateDeploymentStrategyType},
			Template: kube.PodTemplateSpec{ObjectMeta: tm, Spec: spec},
		},
	}, nil
}

// attachHint says how a client reaches a stdio server: attach to its stdin
// and stdout (one session: stdin closes when the client detaches).
func attachHint(p *compiler.Plan, o Options, obj string) string {
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	return "kubectl attach -i -q" + ns + " -c " + p.Server + " " + obj
}

// podSpec is the server's Pod spec: its container, confined, with the
// volumes in memory, the volumes of the grants, the env and the limits, in
// a Pod that shares nothing with the node.
func podSpec(p *compiler.Plan, r compiler.Resolver, o Options, restart kube.RestartPolicy) (kube.PodSpec, error) {
	if p.User.Invoker {
		// Unreachable after check (the user row is Missing), kept as a guard.
		return kube.PodSpec{}, userError(p, `user "invoker"`, "a cluster has no invoking user")
	}
	c := serverContainer(p)
	vols := memoryVolumes(p, &c)
	grants, err := grantVolumes(p, r, o, &c)
	if err != nil {
		return kube.PodSpec{}, err
	}
	vols = append(vols, grants...)
	c.Env = envVars(p, o)
	credEnv, credVols, credMounts := serverCredentials(p)
	c.Env = append(c.Env, credEnv...)
	vols = append(vols, credVols...)
	c.VolumeMounts = append(c.VolumeMounts, credMounts...)
	c.Resources = limits(p)
	for _, s := range append([]string{p.Image, p.Workdir}, p.Command...) {
		if err := emit.CheckSafe(p.Server, "argument", s); err != nil {
			return kube.PodSpec{}, err
		}
	}

	f := false
	uid, gid := int64(p.User.UID), int64(p.User.GID)
	nonRoot := !p.User.Root()
	strict := kube.SupplementalGroupsPolicyStrict
	return kube.PodSpec{
		Containers:                   []kube.Container{c},
		Volumes:                      vols,
		RestartPolicy:                restart,
		AutomountServiceAccountToken: &f,
		EnableServiceLinks:           &f,
		ShareProcessNamespace:        &f,
		HostNetwork:                  false, // the zero value: omitted from the YAML, as are hostPID and hostIPC
		HostPID:                      false,
		HostIPC:                      false,
		HostUsers:                    hostUsers(p),
		SecurityContext: &kube.PodSecurityContext{
			RunAsNonRoot:             &nonRoot,
			RunAsUser:                &uid,
			RunAsGroup:               &gid,
			SupplementalGroupsPolicy: &strict,
			SeccompProfile:           &kube.SeccompProfile{Type: kube.SeccompProfileTypeRuntimeDefault},
		},
	}, nil
}

// serverContainer is the server's container with every subtraction in its
// securityContext, before its volumes, env and limits.
func serverContainer(p *compiler.Plan) kube.Container {
	f, t := false, true
	uid, gid := int64(p.User.UID), int64(p.User.GID)
	nonRoot := !p.User.Root()
	return kube.Container{
		Name:            p.Server,
		Image:           p.Image,
		Args:            p.Command, // like `docker run IMAGE CMD...`: the image's entrypoint stays
		WorkingDir:      p.Workdir,
		Stdin:           true,
		StdinOnce:       true,
		TTY:             false,
		ImagePullPolicy: kube.PullIfNotPresent,
		SecurityContext: &kube.SecurityContext{
			Privileged:               &f,
			AllowPrivilegeEscalation: &f,
			ReadOnlyRootFilesystem:   &t,
			RunAsNonRoot:             &nonRoot,
			RunAsUser:                &uid,
			RunAsGroup:               &gid,
			Capabilities:             &kube.Capabilities{Drop: []kube.Capability{"ALL"}},
			SeccompProfile:           &kube.SeccompProfile{Type: kube.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// memoryVolumes are the emptyDirs in memory, mounted in c: the masks over
// the directories a runtime leaves writable, unless a grant is there (a
// mask would hide it), and the scratch.
func memoryVolumes(p *compiler.Plan, c *kube.Container) []kube.Volume {
	var vols []kube.Volume
	var masks []string
	for _, d := range maskedDirs {
		if !p.HoldsGrantAt(d) {
			masks = append(masks, d)
		}
	}
	if len(masks) > 0 {
		vols = append(vols, kube.Volume{Name: volMask(p), VolumeSource: kube.VolumeSource{
			EmptyDir: &kube.EmptyDirVolumeSource{Medium: kube.StorageMediumMemory, SizeLimit: &maskSize}}})
		for _, d := range masks {
			c.VolumeMounts = append(c.VolumeMounts, roMount(volMask(p), d, "", false))
		}
	}
	for i, s := range p.Scratches() {
		name := volScratch(p)
		if i > 0 { // the first keeps its name: existing manifests stay as they are
			name += "-" + strconv.Itoa(i+1)
		}
		size := kube.BinarySI(s.SizeBytes)
		vols = append(vols, kube.Volume{Name: name, VolumeSource: kube.VolumeSource{
			EmptyDir: &kube.EmptyDirVolumeSource{Medium: kube.StorageMediumMemory, SizeLimit: &size}}})
		c.VolumeMounts = append(c.VolumeMounts, kube.VolumeMount{Name: name, MountPath: s.Target})
	}
	return vols
}

// grantVolumes are the volumes of the plan's mounts, mounted in c with its
// protected entries shown again read-only over them; c's mounts end
// sorted by depth.
func grantVolumes(p *compiler.Plan, r compiler.Resolver, o Options, c *kube.Container) ([]kube.Volume, error) {
	var vols []kube.Volume
	backing := make([]backed, len(p.Mounts))
	for i, m := range p.Mounts {
		v, b, err := mountVolume(p, r, o, i)
		if err != nil {
			return nil, err
		}
		if v != nil {
			vols = append(vols, *v)
		}
		backing[i] = b
		if m.Mode == compiler.ReadOnly {
			c.VolumeMounts = append(c.VolumeMounts, roMount(b.vol, m.Target, b.sub, true))
		} else {
			c.VolumeMounts = append(c.VolumeMounts, kube.VolumeMount{Name: b.vol, MountPath: m.Target, SubPath: b.sub})
		}
	}
	// Protected entries: the volume showing them again, read-only, at the
	// entry's subPath; the runtime orders mounts by depth, so it lands on
	// top. The kubelet resolves a subPath without leaving the volume (a
	// symlink planted there is refused).
	for _, pr := range p.Protected {
		i, sub, err := holder(p, pr)
		if err != nil {
			return nil, err
		}
		c.VolumeMounts = append(c.VolumeMounts, roMount(backing[i].vol, pr.Target, path.Join(backing[i].sub, sub), true))
	}
	sort.SliceStable(c.VolumeMounts, func(i, j int) bool {
		a, b := c.VolumeMounts[i].MountPath, c.VolumeMounts[j].MountPath
		if depth(a) != depth(b) {
			return depth(a) < depth(b)
		}
		return a < b
	})
	return vols, nil
}

// mountVolume is what shows mount i: a claim by default, else (on opt-in)
// a hostPath of its source, or, for a source inside a read-write mount,
// that mount's volume at a subPath (then no volume of its own).
func mountVolume(p *compiler.Plan, r compiler.Resolver, o Options, i int) (*kube.Volume, backed, error) {
	m := p.Mounts[i]
	if claim, ok := o.Claims[m.Target]; ok || !o.HostPath && !nestedInWritable(p, i) {
		if !ok {
			claim = ClaimName(p.Server, m.Target)
		}
		if errs := kube.IsDNS1123Subdomain(claim); len(errs) > 0 {
			return nil, backed{}, fmt.Errorf("server %q: claim %q for %s: %s", p.Server, claim, m.Target, strings.Join(errs, "; "))
		}
		v := kube.Volume{Name: volMount(i), VolumeSource: kube.VolumeSource{
			PersistentVolumeClaim: &kube.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: m.Mode == compiler.ReadOnly}}}
		return &v, backed{vol: volMount(i)}, nil
	}
	if j, sub, ok := writableAncestor(p, i); ok {
		// A source the server can write beside (inside a read-write
		// mount): a hostPath of it would follow a symlink the server
		// planted there at the next start. The outer volume at a
		// subPath does not: the kubelet refuses a subPath that leaves
		// its volume.
		return nil, backed{vol: volMount(j), sub: sub}, nil
	}
	src := r.Resolve(m.Source)
	if err := emit.CheckSafe(p.Server, "mount source", src); err != nil {
		return nil, backed{}, err
	}
	dir := kube.HostPathDirectory
	v := kube.Volume{Name: volMount(i), VolumeSource: kube.VolumeSource{
		HostPath: &kube.HostPathVolumeSource{Path: src, Type: &dir}}}
	return &v, backed{vol: volMount(i)}, nil
}

// envVars are the granted variables, each read from its Secret or
// ConfigMap key (the manifest holds no value), then the policy's constant
// values (setenv, literal), then, for an egress
// allowlist, the proxy's address.
func envVars(p *compiler.Plan, o Options) []kube.EnvVar {
	f := false
	var out []kube.EnvVar
	for _, e := range p.Env {
		name := e.Name
		src, ok := o.Env[name]
		if !ok {
			src = EnvSource{}
		}
		obj, key := src.Name, src.Key
		if obj == "" {
			obj = p.Server + "-env"
		}
		if key == "" {
			key = name
		}
		ev := kube.EnvVar{Name: name, ValueFrom: &kube.EnvVarSource{}}
		ref := kube.LocalObjectReference{Name: obj}
		if src.ConfigMap {
			ev.ValueFrom.ConfigMapKeyRef = &kube.ConfigMapKeySelector{LocalObjectReference: ref, Key: key, Optional: &f}
		} else {
			ev.ValueFrom.SecretKeyRef = &kube.SecretKeySelector{LocalObjectReference: ref, Key: key, Optional: &f}
		}
		out = append(out, ev)
	}
	for _, e := range p.SetEnv {
		out = append(out, kube.EnvVar{Name: e.Name, Value: e.Value}) // the policy's constant: not a secret
	}
	if p.Network.Mode == "allowlist" {
		for _, kv := range proxyEnv(p, o) {
			out = append(out, kube.EnvVar{Name: kv[0], Value: kv[1]}) // not secrets: the proxy's address
		}
	}
	return out
}

// limits are the plan's memory and CPU limits, requested as much.
func limits(p *compiler.Plan) kube.ResourceRequirements {
	s := p.Subtractions
	if s.MemoryBytes <= 0 && s.MilliCPUs <= 0 {
		return kube.ResourceRequirements{}
	}
	l := kube.ResourceList{}
	if s.MemoryBytes > 0 {
		l[kube.ResourceMemory] = kube.BinarySI(s.MemoryBytes)
	}
	if s.MilliCPUs > 0 {
		l[kube.ResourceCPU] = kube.MilliDecimalSI(s.MilliCPUs)
	}
	return kube.ResourceRequirements{Limits: l, Requests: maps.Clone(l)}
}

// nestedInWritable reports whether mount i's source is inside a read-write
// mount's (it is then that mount's volume at a subPath).
func nestedInWritable(p *compiler.Plan, i int) bool {
	_, _, ok := writableAncestor(p, i)
	return ok
}

// ClaimName is the PersistentVolumeClaim a mount is backed by unless
// Options.Claims names another: "<server>-<target>", the target's
// slashes and every other character a name cannot hold as "-". Where that
// loses anything (the target does not read back from the name: a "-", a
// ".", an upper-case letter), or the name would be too long, the first 8
// hex digits of the target's SHA-256 are appended, so two targets never
// share a claim.
func ClaimName(server, target string) string {
	var b strings.Builder
	dash := true // no leading dash, no runs
	for _, r := range strings.TrimPrefix(target, "/") {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimSuffix(b.String(), "-")
	if name == "" {
		name = "root"
	}
	exact := "/"+strings.ReplaceAll(name, "-", "/") == target
	const maxLen = 253 - 9 // room for the hash
	if full := server + "-" + name; exact && len(full) <= 253 {
		return full
	}
	full := server + "-" + name
	if len(full) > maxLen {
		full = strings.TrimSuffix(full[:maxLen], "-")
	}
	sum := sha256.Sum256([]byte(target))
	return full + "-" + hex.EncodeToString(sum[:4])
}

// backed is the volume showing a mount, and the path inside it.
type backed struct{ vol, sub string }

// writableAncestor finds, for mount i, the outermost read-write mount
// whose source holds i's source (and is not i's), with the path of i's
// source inside it. That mount has a volume of its own: no read-write
// mount holds its source (it would be further out).
func writableAncestor(p *compiler.Plan, i int) (int, string, bool) {
	src := p.Mounts[i].Source
	best, sub := -1, ""
	for j, m := range p.Mounts {
		if j == i || m.Mode != compiler.ReadWrite || m.Source.Base != src.Base {
			continue
		}
		rel, ok := below(m.Source.Rel, src.Rel)
		if !ok || rel == "." {
			continue
		}
		if best < 0 || len(m.Source.Rel) < len(p.Mounts[best].Source.Rel) {
			best, sub = j, rel
		}
	}
	return best, sub, best >= 0
}

// below reports whether rel is at or below base (clean slash paths, "."
// for the base itself), and the path from base to rel.
func below(base, rel string) (string, bool) {
	if base == "." {
		return rel, true
	}
	if rel == base {
		return ".", true
	}
	if strings.HasPrefix(rel, base+"/") {
		return strings.TrimPrefix(rel, base+"/"), true
	}
	return "", false
}

// roMount is a read-only volume mount. A mount of the node's files is
// recursively read-only (recursiveReadOnly: Enabled: a runtime that cannot
// do it refuses the Pod rather than leave submounts writable); an empty
// mask has no submounts and needs no more than readOnly.
func roMount(vol, target, sub string, recursive bool) kube.VolumeMount {
	m := kube.VolumeMount{Name: vol, MountPath: target, SubPath: sub, ReadOnly: true}
	if recursive {
		rro := kube.RecursiveReadOnlyEnabled
		m.RecursiveReadOnly = &rro
	}
	return m
}

func depth(p string) int { return strings.Count(strings.TrimSuffix(p, "/"), "/") }

// holder finds the mount showing a protected entry at its target (the
// deepest one holding it) and the entry's path inside that mount's volume.
func holder(p *compiler.Plan, pr compiler.Protected) (int, string, error) {
	best := -1
	for i, m := range p.Mounts {
		if strings.HasPrefix(pr.Target, strings.TrimSuffix(m.Target, "/")+"/") {
			if best < 0 || len(m.Target) > len(p.Mounts[best].Target) {
				best = i
			}
		}
	}
	if best >= 0 {
		m := p.Mounts[best]
		sub := strings.TrimPrefix(pr.Target, strings.TrimSuffix(m.Target, "/")+"/")
		if m.Source.Join(sub) == pr.Source && path.Clean(sub) == sub && !strings.HasPrefix(sub, "..") {
			return best, sub, nil
		}
	}
	return 0, "", &emit.NotEnforceableError{Pos: p.Pos, Field: p.Field("mounts"),
		Server: p.Server, Backend: Backend,
		Restriction: fmt.Sprintf("protected path %s (%s) outside the mount that shows it", pr.Target, pr.Source),
		Alternative: "mount the folder holding it read-only"}
}

func proxyIP(o Options) string {
	if o.EgressProxyIP != "" {
		return o.EgressProxyIP
	}
	return EgressProxyIPPlaceholder
}

// proxyEnv is sandbox.ProxyEnv with the proxy's Service address in place of
// the sandbox's loopback forwarder.
func proxyEnv(p *compiler.Plan, o Options) [][2]string {
	local := "http://127.0.0.1:" + strconv.Itoa(p.Network.ProxyPort)
	url := "http://" + proxyIP(o) + ":" + strconv.Itoa(p.Network.ProxyPort)
	var out [][2]string
	for _, kv := range sandbox.ProxyEnv(p.Network.ProxyPort) {
		if kv[1] == local {
			kv[1] = url
		}
		out = append(out, kv)
	}
	return out
}

// NetworkPolicies deny the server's Pod every connection in and out; for
// an egress allowlist, they let it reach only the egress-proxy Pod on the
// proxy's port, and let that Pod reach only the allowlist's ports.
//
// A NetworkPolicy cannot match a host name: the proxy matches every
// request's host against the allowlist (and refuses private addresses),
// the policy on the proxy restricts the ports and refuses the private
// ranges too (proxyEgressRules), so that the cluster's services are not
// left to the proxy's check alone. Host entries are therefore not refused:
// they are enforced by the proxy, not by the CNI.
func NetworkPolicies(p *compiler.Plan, o Options) ([]*kube.NetworkPolicy, error) {
	if err := check(p, o); err != nil {
		return nil, err
	}
	both := []kube.PolicyType{kube.PolicyTypeIngress, kube.PolicyTypeEgress}
	tcp := kube.ProtocolTCP
	np := func(name string, sel map[string]string) *kube.NetworkPolicy {
		return &kube.NetworkPolicy{
			TypeMeta:   kube.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: meta(p, o, name, serverLabels(p)),
			Spec: kube.NetworkPolicySpec{
				PodSelector: kube.LabelSelector{MatchLabels: sel},
				PolicyTypes: both,
			},
		}
	}
	deny := np(p.Server+"-deny-all", serverSelector(p))
	out := []*kube.NetworkPolicy{deny}
	if p.Network.Mode != "allowlist" {
		return out, nil
	}
	proxyPort := kube.IntOrString(p.Network.ProxyPort)

	// The server: out to the proxy's port on the proxy Pod, nothing else
	// (no DNS either: HTTPS_PROXY names the proxy by address).
	srv := np(p.Server+"-to-egress-proxy", serverSelector(p))
	srv.Spec.PolicyTypes = []kube.PolicyType{kube.PolicyTypeEgress}
	srv.Spec.Egress = []kube.NetworkPolicyEgressRule{{
		To:    []kube.NetworkPolicyPeer{{PodSelector: &kube.LabelSelector{MatchLabels: EgressProxyLabels(p.Server)}}},
		Ports: []kube.NetworkPolicyPort{{Protocol: &tcp, Port: &proxyPort}},
	}}

	// The proxy: in from this server only, on its port; out to the
	// allowlist's ports anywhere but the private ranges (proxyEgressRules),
	// and to the cluster DNS, which it needs to resolve the allowed names.
	dnsNS := o.DNSNamespace
	if dnsNS == "" {
		dnsNS = "kube-system"
	}
	dnsLabels := o.DNSLabels
	if dnsLabels == nil {
		dnsLabels = map[string]string{"k8s-app": "kube-dns"}
	}
	udp := kube.ProtocolUDP
	dns := kube.IntOrString(53)
	proxy := np(p.Server+"-egress-proxy", EgressProxyLabels(p.Server))
	proxy.Spec.Ingress = []kube.NetworkPolicyIngressRule{{
		From:  []kube.NetworkPolicyPeer{{PodSelector: &kube.LabelSelector{MatchLabels: serverSelector(p)}}},
		Ports: []kube.NetworkPolicyPort{{Protocol: &tcp, Port: &proxyPort}},
	}}
	proxy.Spec.Egress = append(proxyEgressRules(p, o), kube.NetworkPolicyEgressRule{
		To: []kube.NetworkPolicyPeer{{
			NamespaceSelector: &kube.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": dnsNS}},
			PodSelector:       &kube.LabelSelector{MatchLabels: dnsLabels},
		}},
		Ports: []kube.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
	})
	return append(out, srv, proxy), nil
}

func proxyImage(o Options) string {
	if o.ProxyImage != "" {
		return o.ProxyImage
	}
	return ProxyImagePlaceholder
}

// proxyLabels are the egress-proxy Pod's labels: EgressProxyLabels, which
// its Service and the NetworkPolicies select, and the usual names.
func proxyLabels(p *compiler.Plan) map[string]string {
	l := map[string]string{
		"app.kubernetes.io/name":       p.Server + "-egress-proxy",
		"app.kubernetes.io/managed-by": "mcpolicy",
	}
	for k, v := range EgressProxyLabels(p.Server) {
		l[k] = v
	}
	return l
}

// EgressProxyCommand is what the egress-proxy Pod runs: `mcpolicy
// egress-proxy` on every address of the Pod at the plan's proxy port, the
// allowlist as --allow entries (canonical spellings: no policy file in the
// Pod), the decisions as JSON lines on stdout (kubectl logs). Who may
// connect is the NetworkPolicy's to decide: across Pods the proxy cannot
// check its peer as it does on mcpolicy run's unix socket.
func EgressProxyCommand(p *compiler.Plan, o Options) []string {
	listen := "0.0.0.0"
	if a, err := netip.ParseAddr(o.EgressProxyIP); err == nil && a.Is6() && !a.Is4In6() {
		listen = "[::]"
	}
	cmd := []string{ProxyBinary, "egress-proxy", "--listen", listen + ":" + strconv.Itoa(p.Network.ProxyPort)}
	for _, e := range p.Network.Entries() {
		cmd = append(cmd, "--allow", e)
	}
	return append(cmd, credentialArgs(p)...)
}

// proxyPodSpec is the egress-proxy Pod's spec, with the server's
// subtractions: non-root, read-only root, no capabilities, no privilege
// escalation, RuntimeDefault seccomp, no service account token, no
// service links, no host namespaces, a user namespace of its own unless
// the plan accepts AcceptHostUsers; bounded resources (proxyResources);
// it needs no volume (the log goes to stdout) and no stdin.
func proxyPodSpec(p *compiler.Plan, o Options, restart kube.RestartPolicy) (kube.PodSpec, error) {
	if err := emit.CheckSafe(p.Server, "egress proxy image", proxyImage(o)); err != nil {
		return kube.PodSpec{}, err
	}
	for _, a := range EgressProxyCommand(p, o) {
		if err := emit.CheckSafe(p.Server, "egress proxy argument", a); err != nil {
			return kube.PodSpec{}, err
		}
	}
	f, t := false, true
	uid := int64(ProxyUser)
	runtimeDefault := &kube.SeccompProfile{Type: kube.SeccompProfileTypeRuntimeDefault}
	strict := kube.SupplementalGroupsPolicyStrict
	var vols []kube.Volume
	var mounts []kube.VolumeMount
	var fsGroup *int64
	if v, m, ok := proxyCredentialVolume(p); ok {
		// The Secret's files are root's, mode 0440, group the proxy's.
		vols, mounts, fsGroup = []kube.Volume{v}, []kube.VolumeMount{m}, &uid
	}
	return kube.PodSpec{
		Volumes: vols,
		Containers: []kube.Container{{
			VolumeMounts:    mounts,
			Name:            "egress-proxy",
			Image:           proxyImage(o),
			Command:         EgressProxyCommand(p, o),
			Ports:           []kube.ContainerPort{{Name: "proxy", ContainerPort: int32(p.Network.ProxyPort), Protocol: kube.ProtocolTCP}},
			Resources:       proxyResources(),
			ImagePullPolicy: kube.PullIfNotPresent,
			SecurityContext: &kube.SecurityContext{
				Privileged:               &f,
				AllowPrivilegeEscalation: &f,
				ReadOnlyRootFilesystem:   &t,
				RunAsNonRoot:             &t,
				RunAsUser:                &uid,
				RunAsGroup:               &uid,
				Capabilities:             &kube.Capabilities{Drop: []kube.Capability{"ALL"}},
				SeccompProfile:           runtimeDefault,
			},
		}},
		RestartPolicy:                restart,
		AutomountServiceAccountToken: &f,
		EnableServiceLinks:           &f,
		ShareProcessNamespace:        &f,
		HostUsers:                    hostUsers(p),
		SecurityContext: &kube.PodSecurityContext{
			RunAsNonRoot:             &t,
			RunAsUser:                &uid,
			RunAsGroup:               &uid,
			SupplementalGroupsPolicy: &strict,
			FSGroup:                  fsGroup,
			SeccompProfile:           runtimeDefault,
		},
	}, nil
}

// EgressProxy is the egress-proxy workload of a server with an allowlist,
// of the kind Options.Kind selects (a *kube.Pod or a
// *kube.Deployment of one replica): mcpolicy's egress proxy
// (EgressProxyCommand) in the image Options.ProxyImage, labelled
// EgressProxyLabels(server), restarted when it exits.
func EgressProxy(p *compiler.Plan, o Options) (any, error) {
	if err := check(p, o); err != nil {
		return nil, err
	}
	if p.Network.Mode != "allowlist" {
		return nil, fmt.Errorf("server %q has no egress allowlist: it needs no egress proxy", p.Server)
	}
	spec, err := proxyPodSpec(p, o, kube.RestartPolicyAlways)
	if err != nil {
		return nil, err
	}
	name := p.Server + "-egress-proxy"
	if o.kind() != KindDeployment {
		return &kube.Pod{
			TypeMeta:   kube.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: meta(p, o, name, proxyLabels(p)),
			Spec:       spec,
		}, nil
	}
	one := int32(1)
	tm := meta(p, o, "", proxyLabels(p))
	tm.Namespace = ""
	return &kube.Deployment{
		TypeMeta:   kube.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(p, o, name, proxyLabels(p)),
		Spec: kube.DeploymentSpec{
			Replicas: &one,
			Selector: &kube.LabelSelector{MatchLabels: EgressProxyLabels(p.Server)},
			Template: kube.PodTemplateSpec{ObjectMeta: tm, Spec: spec},
		},
	}, nil
}

// EgressService is the egress proxy's address for a server with an
// allowlist: a Service with a fixed cluster IP (Options.EgressProxyIP, a
// free address of the cluster's service range) selecting the egress-proxy
// Pod (EgressProxy), so the server needs no DNS.
func EgressService(p *compiler.Plan, o Options) (*kube.Service, error) {
	if err := check(p, o); err != nil {
		return nil, err
	}
	if p.Network.Mode != "allowlist" {
		return nil, fmt.Errorf("server %q has no egress allowlist: it needs no egress proxy", p.Server)
	}
	port := int32(p.Network.ProxyPort)
	return &kube.Service{
		TypeMeta:   kube.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(p, o, p.Server+"-egress-proxy", EgressProxyLabels(p.Server)),
		Spec: kube.ServiceSpec{
			Type:      kube.ServiceTypeClusterIP,
			ClusterIP: proxyIP(o),
			Selector:  EgressProxyLabels(p.Server),
			Ports: []kube.ServicePort{{Name: "proxy", Protocol: kube.ProtocolTCP, Port: port,
				TargetPort: kube.IntOrString(port)}},
		},
	}, nil
}

// Objects are every object of the server's file, in order: the workload,
// its NetworkPolicies, and for an allowlist the egress proxy's workload
// (of the same kind) and Service.
func Objects(p *compiler.Plan, r compiler.Resolver, o Options) ([]any, error) {
	var objs []any
	if o.kind() == KindDeployment {
		d, err := Deployment(p, r, o)
		if err != nil {
			return nil, err
		}
		objs = append(objs, d)
	} else {
		pod, err := Pod(p, r, o)
		if err != nil {
			return nil, err
		}
		objs = append(objs, pod)
	}
	nps, err := NetworkPolicies(p, o)
	if err != nil {
		return nil, err
	}
	for _, n := range nps {
		objs = append(objs, n)
	}
	if p.Network.Mode == "allowlist" {
		proxy, err := EgressProxy(p, o)
		if err != nil {
			return nil, err
		}
		objs = append(objs, proxy)
		svc, err := EgressService(p, o)
		if err != nil {
			return nil, err
		}
		objs = append(objs, svc)
	}
	return objs, nil
}

// Manifest renders the server's objects as one multi-document YAML file,
// deterministic (keys sorted, no timestamps, no empty status), with a
// header saying what it is and how a client reaches the server.
func Manifest(p *compiler.Plan, r compiler.Resolver, o Options) ([]byte, error) {
	objs, err := Objects(p, r, o)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by mcpolicy build; do not edit.\n")
	fmt.Fprintf(&b, "# MCP server %q, plan %s (mcpolicy explain %s).\n", p.Server, p.Hash, p.Server)
	fmt.Fprintf(&b, "# A stdio server: a client reaches it with `%s`.\n", attachHint(p, o, strings.ToLower(o.kind())+"/"+p.Server))
	fmt.Fprintf(&b, "# NetworkPolicy confines it only where the cluster's CNI enforces NetworkPolicy.\n")
	if hostUsers(p) != nil {
		fmt.Fprintf(&b, "# Each Pod has a user namespace of its own (hostUsers: false): nodes whose runtime, kernel or volumes\n")
		fmt.Fprintf(&b, "# cannot give it one do not start it (the policy accepts %q for those).\n", AcceptHostUsers)
	}
	if hostPaths(objs) {
		fmt.Fprintf(&b, "# hostPath volumes (opted in): grants of the node's files, which lint flags; ${PROJECT_ROOT} and\n")
		fmt.Fprintf(&b, "# ${HOME} stand for paths on the node. Pod Security \"restricted\" and \"baseline\" refuse hostPath:\n")
		fmt.Fprintf(&b, "# the Pod runs only in a namespace labelled pod-security.kubernetes.io/enforce=privileged.\n")
	}
	if cs := claims(p, objs); len(cs) > 0 {
		fmt.Fprintf(&b, "# PersistentVolumeClaims the cluster must provide, each holding what the mount's source holds:\n")
		for _, c := range cs {
			fmt.Fprintf(&b, "#   %s\n", c)
		}
	}
	if p.Network.Mode == "allowlist" {
		fmt.Fprintf(&b, "# Egress: only through the egress-proxy Pod labelled %s, at %s:%d;\n",
			labelString(EgressProxyLabels(p.Server)), proxyIP(o), p.Network.ProxyPort)
		fmt.Fprintf(&b, "# the proxy checks hosts (%s), NetworkPolicy ports, and refuses\n", strings.Join(p.Network.Entries(), ", "))
		fmt.Fprintf(&b, "# %s but an address the allowlist names;\n", privateRangesPhrase(o))
		fmt.Fprintf(&b, "# a Pod or Service range of the cluster outside them is reachable unless named (kubernetes.Options.ClusterCIDRs).\n")
		fmt.Fprintf(&b, "# The egress proxy runs %s: an image holding a static mcpolicy at %s.\n", proxyImage(o), ProxyBinary)
		fmt.Fprintf(&b, "# Only its NetworkPolicy decides who may use it: without a CNI that enforces it, any Pod can.\n")
	}
	if len(p.Credentials) > 0 {
		var names []string
		for _, g := range p.Credentials {
			names = append(names, g.Name)
		}
		fmt.Fprintf(&b, "# Credentials (%s): the server holds placeholders; the egress-proxy Pod alone mounts the values.\n", strings.Join(names, ", "))
		fmt.Fprintf(&b, "# Apply their Secrets %s, %s and ConfigMap %s first:\n",
			CredentialsSecret(p.Server), PlaceholdersSecret(p.Server), SessionCAConfigMap(p.Server))
		fmt.Fprintf(&b, "#   mcpolicy credentials %s | kubectl apply -f -\n", p.Server)
	}
	for _, obj := range objs {
		y, err := render(obj)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return []byte(b.String()), nil
}

// workloadSpec is the Pod spec of the workload, objs[0].
func workloadSpec(objs []any) *kube.PodSpec {
	switch w := objs[0].(type) {
	case *kube.Pod:
		return &w.Spec
	case *kube.Deployment:
		return &w.Spec.Template.Spec
	}
	return nil
}

// hostPaths reports whether the workload has a hostPath volume.
func hostPaths(objs []any) bool {
	spec := workloadSpec(objs)
	return spec != nil && slices.ContainsFunc(spec.Volumes, func(v kube.Volume) bool { return v.HostPath != nil })
}

// claims describes each claim of the workload: its name, the mount it
// backs, the mode, and the plan's source it must hold.
func claims(p *compiler.Plan, objs []any) []string {
	spec := workloadSpec(objs)
	if spec == nil {
		return nil
	}
	var out []string
	for i, m := range p.Mounts {
		for _, v := range spec.Volumes {
			if v.Name == volMount(i) && v.PersistentVolumeClaim != nil {
				out = append(out, fmt.Sprintf("%s: %s (%s), holding %s", v.PersistentVolumeClaim.ClaimName, m.Target, m.Mode,
					compiler.Placeholders{}.Resolve(m.Source)))
			}
		}
	}
	return out
}

// Artefacts is what build writes for the plan: kubernetes/<server>.yaml.
func Artefacts(p *compiler.Plan, o Options) ([]emit.File, error) {
	data, err := Manifest(p, compiler.Placeholders{}, o)
	if err != nil {
		return nil, err
	}
	return []emit.File{{Name: Backend + "/" + p.Server + ".yaml", Data: data}}, nil
}

func labelString(l map[string]string) string {
	var s []string
	for k, v := range l {
		s = append(s, k+"="+v)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func containersOf(spec map[string]any) []map[string]any {
	if tpl, ok := spec["template"].(map[string]any); ok {
		if s, ok := tpl["spec"].(map[string]any); ok {
			spec = s
		}
	}
	var out []map[string]any
	cs, _ := spec["containers"].([]any)
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// render marshals one object to YAML without the fields the API server
// fills (an empty status).
func render(obj any) ([]byte, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, "status") // the API server's to fill; nothing an emitter says
	if spec, ok := m["spec"].(map[string]any); ok {
		for _, c := range containersOf(spec) {
			if r, ok := c["resources"].(map[string]any); ok && len(r) == 0 {
				delete(c, "resources")
			}
		}
	}
	if spec, ok := m["spec"].(map[string]any); ok {
		if tpl, ok := spec["template"].(map[string]any); ok {
			if md, ok := tpl["metadata"].(map[string]any); ok && len(md) == 0 {
				delete(tpl, "metadata")
			}
		}
	}
	return yaml.Marshal(m)
}
