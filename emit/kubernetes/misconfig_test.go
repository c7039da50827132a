package kubernetes_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The Kubernetes misconfiguration checks of trivy v0.74.0 (the
// trivy-checks bundle it embeds, commit 79d27547baf5), restated in Go over
// the decoded objects, each under its ID and severity: trivy's module does
// not build here within minutes, so its checks run as assertions (what
// each Rego rule denies, read from its source, not its words). Only the
// checks that look at the kinds the backend emits (Pod, Deployment,
// NetworkPolicy, Service) are here; those of kinds it never writes
// (RBAC, ConfigMap, LimitRange, ResourceQuota, control-plane files) are not.
// As in trivy, a container's securityContext is its own over the Pod's
// inherited fields (runAsUser, runAsGroup, runAsNonRoot, seLinuxOptions,
// seccompProfile, windowsOptions), and a container is any of
// containers and initContainers.

// finding is one check's denial: where, and the check's words.
type finding struct {
	ID, Severity string
	Object       string // Kind/name
	Container    string // "" for the object as a whole
	Msg          string
}

func (f finding) String() string {
	where := f.Object
	if f.Container != "" {
		where += " container " + f.Container
	}
	return fmt.Sprintf("%s (%s) %s: %s", f.ID, f.Severity, where, f.Msg)
}

// workload is a Pod, or a Deployment's Pod template, as the checks see it.
type workload struct {
	kind, name, namespace string
	meta                  metav1.ObjectMeta // the Pod's (or template's) labels and annotations
	spec                  corev1.PodSpec
}

// container is a container with its effective securityContext.
type container struct {
	corev1.Container
	sc corev1.SecurityContext
}

func (w workload) containers() []container {
	var out []container
	for _, c := range append(slices.Clone(w.spec.InitContainers), w.spec.Containers...) {
		var sc corev1.SecurityContext
		if p := w.spec.SecurityContext; p != nil {
			sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot = p.RunAsUser, p.RunAsGroup, p.RunAsNonRoot
			sc.SELinuxOptions, sc.SeccompProfile, sc.WindowsOptions = p.SELinuxOptions, p.SeccompProfile, p.WindowsOptions
		}
		if s := c.SecurityContext; s != nil {
			merged := *s
			if merged.RunAsUser == nil {
				merged.RunAsUser = sc.RunAsUser
			}
			if merged.RunAsGroup == nil {
				merged.RunAsGroup = sc.RunAsGroup
			}
			if merged.RunAsNonRoot == nil {
				merged.RunAsNonRoot = sc.RunAsNonRoot
			}
			if merged.SELinuxOptions == nil {
				merged.SELinuxOptions = sc.SELinuxOptions
			}
			if merged.SeccompProfile == nil {
				merged.SeccompProfile = sc.SeccompProfile
			}
			if merged.WindowsOptions == nil {
				merged.WindowsOptions = sc.WindowsOptions
			}
			sc = merged
		}
		out = append(out, container{c, sc})
	}
	return out
}

// emptySC reports whether a container's effective securityContext is {}.
func emptySC(sc corev1.SecurityContext) bool {
	return reflect.DeepEqual(sc, corev1.SecurityContext{})
}

// podCheck and containerCheck are a check of a Pod template and of each
// of its containers: the words of a denial, "" for none.
type (
	podCheck       func(w workload) string
	containerCheck func(w workload, c container) string
)

type ksv struct {
	id, severity string
	pod          podCheck
	container    containerCheck
	netpol       func(*networkingv1.NetworkPolicy) string
	service      func(*corev1.Service) string
}

func isTrue(b *bool) bool { return b != nil && *b }

func hasCap(list []corev1.Capability, want string) bool {
	return slices.ContainsFunc(list, func(c corev1.Capability) bool { return strings.EqualFold(string(c), want) })
}

func caps(c container) *corev1.Capabilities {
	if c.sc.Capabilities == nil {
		return &corev1.Capabilities{}
	}
	return c.sc.Capabilities
}

// imageTagged is KSV-0013's test: a digest, or a tag other than latest on
// the last path segment.
func imageTagged(image string) bool {
	if strings.Contains(image, "@") {
		return true
	}
	parts := strings.Split(image, "/")
	last := strings.Split(parts[len(parts)-1], ":")
	return len(last) > 1 && last[len(last)-1] != "latest"
}

// trustedRegistries is KSV-0125's default list (no registries configured):
// Azure, ECR and GCR.
var trustedRegistries = []string{"azurecr.io", "gcr.io", "us.gcr.io", "eu.gcr.io", "asia.gcr.io",
	"ecr.us-east-2.amazonaws.com", "ecr.us-east-1.amazonaws.com", "ecr.us-west-1.amazonaws.com", "ecr.us-west-2.amazonaws.com",
	"ecr.af-south-1.amazonaws.com", "ecr.ap-east-1.amazonaws.com", "ecr.ap-south-1.amazonaws.com", "ecr.ap-northeast-2.amazonaws.com",
	"ecr.ap-southeast-1.amazonaws.com", "ecr.ap-southeast-2.amazonaws.com", "ecr.ap-northeast-1.amazonaws.com",
	"ecr.ca-central-1.amazonaws.com", "ecr.cn-north-1.amazonaws.com.cn", "ecr.cn-northwest-1.amazonaws.com.cn",
	"ecr.eu-central-1.amazonaws.com", "ecr.eu-west-1.amazonaws.com", "ecr.eu-west-2.amazonaws.com", "ecr.eu-south-1.amazonaws.com",
	"ecr.eu-west-3.amazonaws.com", "ecr.eu-north-1.amazonaws.com", "ecr.me-south-1.amazonaws.com", "ecr.sa-east-1.amazonaws.com",
	"ecr.us-gov-east-1.amazonaws.com", "ecr.us-gov-west-1.amazonaws.com"}

// trustedImage is KSV-0125's test: no registry named, or a trusted one.
func trustedImage(image string) bool {
	parts := strings.Split(image, "/")
	return len(parts) < 2 || slices.ContainsFunc(trustedRegistries, func(r string) bool { return strings.HasSuffix(parts[0], r) })
}

// safeSysctls is KSV-0026's list for Kubernetes 1.32 on (Pod Security
// baseline's).
var safeSysctls = []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}

// disallowedHostPaths is KSV-0121's list.
var disallowedHostPaths = []string{"/", "/boot", "/dev", "/etc", "/lib", "/proc", "/sys", "/usr", "/var/lib/docker"}

// ksvChecks are the checks, by ID.
var ksvChecks = []ksv{
	{id: "KSV-0001", severity: "MEDIUM", container: func(_ workload, c container) string {
		if p := c.sc.AllowPrivilegeEscalation; p == nil || *p {
			return "should set securityContext.allowPrivilegeEscalation to false"
		}
		return ""
	}},
	{id: "KSV-0002", severity: "LOW", container: func(w workload, c container) string {
		if v, ok := w.meta.Annotations["container.apparmor.security.beta.kubernetes.io/"+c.Name]; ok && v != "runtime/default" {
			return "should specify an AppArmor profile"
		}
		return ""
	}},
	{id: "KSV-0003", severity: "LOW", container: func(_ workload, c container) string {
		if !hasCap(caps(c).Drop, "ALL") {
			return "should add ALL to securityContext.capabilities.drop"
		}
		return ""
	}},
	{id: "KSV-0004", severity: "LOW", container: func(_ workload, c container) string {
		if caps(c).Drop == nil {
			return "should set securityContext.capabilities.drop"
		}
		return ""
	}},
	{id: "KSV-0005", severity: "HIGH", container: func(_ workload, c container) string {
		if slices.Contains(caps(c).Add, "SYS_ADMIN") {
			return "should not add SYS_ADMIN"
		}
		return ""
	}},
	{id: "KSV-0006", severity: "HIGH", pod: func(w workload) string {
		for _, v := range w.spec.Volumes {
			if v.HostPath != nil && v.HostPath.Path == "/var/run/docker.sock" {
				return "should not mount /var/run/docker.sock"
			}
		}
		return ""
	}},
	{id: "KSV-0007", severity: "LOW", pod: func(w workload) string {
		if w.spec.HostAliases != nil {
			return "should not set hostAliases"
		}
		return ""
	}},
	{id: "KSV-0008", severity: "HIGH", pod: func(w workload) string { return when(w.spec.HostIPC, "should not set hostIPC") }},
	{id: "KSV-0009", severity: "HIGH", pod: func(w workload) string { return when(w.spec.HostNetwork, "should not set hostNetwork") }},
	{id: "KSV-0010", severity: "HIGH", pod: func(w workload) string { return when(w.spec.HostPID, "should not set hostPID") }},
	{id: "KSV-0011", severity: "LOW", container: func(_ workload, c container) string {
		return when(!hasKey(c.Resources.Limits, corev1.ResourceCPU), "should set resources.limits.cpu")
	}},
	{id: "KSV-0012", severity: "MEDIUM", container: func(w workload, c container) string {
		podNonRoot := w.spec.SecurityContext != nil && isTrue(w.spec.SecurityContext.RunAsNonRoot)
		return when(!isTrue(c.sc.RunAsNonRoot) && !podNonRoot, "should set securityContext.runAsNonRoot to true")
	}},
	{id: "KSV-0013", severity: "MEDIUM", container: func(_ workload, c container) string {
		return when(!imageTagged(c.Image), "should specify an image tag")
	}},
	{id: "KSV-0014", severity: "HIGH", container: func(_ workload, c container) string {
		return when(!isTrue(c.sc.ReadOnlyRootFilesystem), "should set securityContext.readOnlyRootFilesystem to true")
	}},
	{id: "KSV-0015", severity: "LOW", container: func(_ workload, c container) string {
		return when(!hasKey(c.Resources.Requests, corev1.ResourceCPU), "should set resources.requests.cpu")
	}},
	{id: "KSV-0016", severity: "LOW", container: func(_ workload, c container) string {
		return when(!hasKey(c.Resources.Requests, corev1.ResourceMemory), "should set resources.requests.memory")
	}},
	{id: "KSV-0017", severity: "HIGH", container: func(_ workload, c container) string {
		return when(isTrue(c.sc.Privileged), "should set securityContext.privileged to false")
	}},
	{id: "KSV-0018", severity: "LOW", container: func(_ workload, c container) string {
		return when(!hasKey(c.Resources.Limits, corev1.ResourceMemory), "should set resources.limits.memory")
	}},
	{id: "KSV-0020", severity: "LOW", container: func(_ workload, c container) string {
		return when(emptySC(c.sc) || c.sc.RunAsUser == nil || *c.sc.RunAsUser <= 10000, "should set securityContext.runAsUser > 10000")
	}},
	{id: "KSV-0021", severity: "LOW", container: func(_ workload, c container) string {
		return when(emptySC(c.sc) || c.sc.RunAsGroup == nil || *c.sc.RunAsGroup <= 10000, "should set securityContext.runAsGroup > 10000")
	}},
	{id: "KSV-0022", severity: "MEDIUM", container: func(_ workload, c container) string {
		return when(len(caps(c).Add) > 0, "should not set securityContext.capabilities.add")
	}},
	{id: "KSV-0023", severity: "MEDIUM", pod: func(w workload) string {
		return when(slices.ContainsFunc(w.spec.Volumes, func(v corev1.Volume) bool { return v.HostPath != nil }), "should not set volumes hostPath")
	}},
	{id: "KSV-0024", severity: "HIGH", container: func(_ workload, c container) string {
		return when(slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.HostPort != 0 }), "should not set ports hostPort")
	}},
	{id: "KSV-0025", severity: "MEDIUM", pod: func(w workload) string {
		var opts []*corev1.SELinuxOptions
		if w.spec.SecurityContext != nil {
			opts = append(opts, w.spec.SecurityContext.SELinuxOptions)
		}
		for _, c := range w.containers() {
			opts = append(opts, c.sc.SELinuxOptions)
		}
		for _, o := range opts {
			if o != nil && (o.User != "" || o.Role != "" || o.Type != "" && !slices.Contains([]string{"container_t", "container_init_t", "container_kvm_t"}, o.Type)) {
				return "uses restricted or invalid seLinuxOptions"
			}
		}
		return ""
	}},
	{id: "KSV-0026", severity: "MEDIUM", pod: func(w workload) string {
		if sc := w.spec.SecurityContext; sc != nil {
			for _, s := range sc.Sysctls {
				if !slices.Contains(safeSysctls, s.Name) {
					return "sets unsafe sysctl " + s.Name
				}
			}
		}
		return ""
	}},
	{id: "KSV-0027", severity: "MEDIUM", container: func(_ workload, c container) string {
		return when(c.sc.ProcMount != nil, "should not set securityContext.procMount")
	}},
	{id: "KSV-0028", severity: "LOW", pod: func(w workload) string {
		for _, v := range w.spec.Volumes {
			s := v.VolumeSource
			if s.GCEPersistentDisk != nil || s.AWSElasticBlockStore != nil || s.GitRepo != nil || s.NFS != nil || s.ISCSI != nil ||
				s.Glusterfs != nil || s.RBD != nil || s.FlexVolume != nil || s.Cinder != nil || s.CephFS != nil || s.Flocker != nil ||
				s.FC != nil || s.AzureFile != nil || s.VsphereVolume != nil || s.Quobyte != nil || s.AzureDisk != nil ||
				s.PortworxVolume != nil || s.ScaleIO != nil || s.StorageOS != nil {
				return "volume " + v.Name + " of a non-core type"
			}
		}
		return ""
	}},
	{id: "KSV-0030", severity: "LOW", container: func(w workload, c container) string {
		if _, ok := w.meta.Annotations["seccomp.security.alpha.kubernetes.io/pod"]; ok {
			return ""
		}
		t := corev1.SeccompProfileType("")
		if c.sc.SeccompProfile != nil {
			t = c.sc.SeccompProfile.Type
		}
		return when(t != corev1.SeccompProfileTypeRuntimeDefault && t != corev1.SeccompProfileTypeLocalhost,
			"either Pod or container should set securityContext.seccompProfile.type to RuntimeDefault")
	}},
	{id: "KSV-0036", severity: "MEDIUM", pod: func(w workload) string {
		if a := w.spec.AutomountServiceAccountToken; a != nil {
			return when(*a, "should set automountServiceAccountToken to false")
		}
		for _, c := range w.containers() {
			for _, m := range c.VolumeMounts {
				if m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount" {
					return "should set automountServiceAccountToken to false"
				}
			}
		}
		return ""
	}},
	{id: "KSV-0037", severity: "MEDIUM", pod: func(w workload) string {
		return when(w.namespace == "kube-system", "should not be in kube-system")
	}},
	{id: "KSV-0102", severity: "CRITICAL", pod: func(w workload) string {
		bad := strings.Contains(w.name, "tiller") || w.meta.Labels["app"] == "helm" || w.meta.Labels["name"] == "tiller"
		for _, c := range w.containers() {
			bad = bad || strings.Contains(c.Image, "tiller")
		}
		return when(bad, "should not deploy tiller")
	}},
	{id: "KSV-0103", severity: "MEDIUM", container: func(_ workload, c container) string {
		return when(c.sc.WindowsOptions != nil && isTrue(c.sc.WindowsOptions.HostProcess), "should not enable hostProcess")
	}},
	{id: "KSV-0104", severity: "MEDIUM", container: func(w workload, c container) string {
		t := ""
		if c.sc.SeccompProfile != nil {
			t = string(c.sc.SeccompProfile.Type)
		} else if w.kind != "Pod" && w.spec.SecurityContext != nil && w.spec.SecurityContext.SeccompProfile != nil {
			t = string(w.spec.SecurityContext.SeccompProfile.Type)
		} else {
			t = w.meta.Annotations["container.seccomp.security.alpha.kubernetes.io/"+c.Name]
		}
		return when(t == "" || strings.EqualFold(t, "unconfined"), "should specify a seccomp profile")
	}},
	{id: "KSV-0105", severity: "LOW", container: func(w workload, c container) string {
		pod := w.spec.SecurityContext != nil && w.spec.SecurityContext.RunAsUser != nil && *w.spec.SecurityContext.RunAsUser == 0
		return when(pod || c.sc.RunAsUser != nil && *c.sc.RunAsUser == 0, "securityContext.runAsUser should be greater than 0")
	}},
	{id: "KSV-0106", severity: "LOW", container: func(_ workload, c container) string {
		if !hasCap(caps(c).Drop, "ALL") {
			return "container should drop all"
		}
		return when(slices.ContainsFunc(caps(c).Add, func(a corev1.Capability) bool { return a != "NET_BIND_SERVICE" }), "container should add nothing but NET_BIND_SERVICE")
	}},
	{id: "KSV-0110", severity: "LOW", pod: func(w workload) string {
		return when(w.namespace == "" || w.namespace == "default", "should set metadata.namespace to a non-default namespace")
	}},
	{id: "KSV-0116", severity: "LOW", pod: func(w workload) string {
		bad := false
		for _, c := range w.containers() {
			bad = bad || c.SecurityContext != nil && c.SecurityContext.RunAsGroup != nil && *c.SecurityContext.RunAsGroup == 0
		}
		if sc := w.spec.SecurityContext; sc != nil {
			bad = bad || sc.RunAsGroup != nil && *sc.RunAsGroup == 0 || slices.Contains(sc.SupplementalGroups, 0) || sc.FSGroup != nil && *sc.FSGroup == 0
		}
		return when(bad, "should set runAsGroup, supplementalGroups and fsGroup above 0")
	}},
	{id: "KSV-0117", severity: "MEDIUM", pod: func(w workload) string {
		for _, c := range w.containers() {
			for _, p := range c.Ports {
				if p.ContainerPort < 1024 {
					return "should not set containerPort below 1024"
				}
			}
		}
		return ""
	}},
	{id: "KSV-0118", severity: "HIGH", pod: func(w workload) string {
		return when(w.spec.SecurityContext == nil || reflect.DeepEqual(*w.spec.SecurityContext, corev1.PodSecurityContext{}), "uses the default security context")
	}, container: func(_ workload, c container) string {
		return when(emptySC(c.sc), "uses the default security context")
	}},
	{id: "KSV-0119", severity: "HIGH", container: func(_ workload, c container) string {
		return when(slices.Contains(caps(c).Add, "NET_RAW"), "should not add NET_RAW")
	}},
	{id: "KSV-0120", severity: "HIGH", container: func(_ workload, c container) string {
		return when(slices.Contains(caps(c).Add, "SYS_MODULE"), "should not add SYS_MODULE")
	}},
	{id: "KSV-0121", severity: "HIGH", pod: func(w workload) string {
		for _, v := range w.spec.Volumes {
			if v.HostPath != nil && slices.Contains(disallowedHostPaths, v.HostPath.Path) {
				return "should not mount hostPath " + v.HostPath.Path
			}
		}
		return ""
	}},
	{id: "KSV-0125", severity: "MEDIUM", container: func(_ workload, c container) string {
		return when(!trustedImage(c.Image), "uses an image from an untrusted registry")
	}},
	{id: "KSV-0038", severity: "MEDIUM", netpol: func(np *networkingv1.NetworkPolicy) string {
		// The Rego rule passes any policy that has a podSelector field,
		// {} included, and the API requires one: a decoded policy always
		// passes. Kept so that the list is complete.
		return ""
	}},
	{id: "KSV-0108", severity: "HIGH", service: func(s *corev1.Service) string {
		return when(len(s.Spec.ExternalIPs) > 0 || s.Spec.ExternalName != "", "should not set external IPs or an external name")
	}},
}

func when(cond bool, msg string) string {
	if cond {
		return msg
	}
	return ""
}

func hasKey(l corev1.ResourceList, k corev1.ResourceName) bool {
	_, ok := l[k]
	return ok
}

// workloads are the Pods and Deployments of the objects, as the checks
// see them.
func workloads(objs []runtime.Object) []workload {
	var out []workload
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Pod:
			out = append(out, workload{"Pod", v.Name, v.Namespace, v.ObjectMeta, v.Spec})
		case *appsv1.Deployment:
			out = append(out, workload{"Deployment", v.Name, v.Namespace, v.Spec.Template.ObjectMeta, v.Spec.Template.Spec})
		}
	}
	return out
}

// misconfigurations runs every check on the objects.
func misconfigurations(objs []runtime.Object) []finding {
	var out []finding
	for _, w := range workloads(objs) {
		obj := w.kind + "/" + w.name
		for _, k := range ksvChecks {
			if k.pod != nil {
				if msg := k.pod(w); msg != "" {
					out = append(out, finding{k.id, k.severity, obj, "", msg})
				}
			}
			if k.container != nil {
				for _, c := range w.containers() {
					if msg := k.container(w, c); msg != "" {
						out = append(out, finding{k.id, k.severity, obj, c.Name, msg})
					}
				}
			}
		}
	}
	for _, o := range objs {
		for _, k := range ksvChecks {
			switch v := o.(type) {
			case *networkingv1.NetworkPolicy:
				if k.netpol != nil {
					if msg := k.netpol(v); msg != "" {
						out = append(out, finding{k.id, k.severity, "NetworkPolicy/" + v.Name, "", msg})
					}
				}
			case *corev1.Service:
				if k.service != nil {
					if msg := k.service(v); msg != "" {
						out = append(out, finding{k.id, k.severity, "Service/" + v.Name, "", msg})
					}
				}
			}
		}
	}
	return out
}
