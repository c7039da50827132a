// Package kube is the part of the Kubernetes API the kubernetes emitter
// writes: the fields it sets of Pod, Deployment, NetworkPolicy and Service,
// named, typed and JSON-tagged as in k8s.io/api and k8s.io/apimachinery
// (v0.37.2), with the quantity and int-or-string formats and the name
// validations of apimachinery.
//
// Why not those modules: their package initialisation (swagger docs,
// scheme registration, json-iterator, klog, cbor modes, validation
// regexps) costs every mcpolicy start 1.2–1.6 ms, for objects it only
// marshals (issue #17). The well-kept library stays the source of truth:
// it is a test dependency, and the tests hold this projection to it byte
// for byte (every emitted manifest decoded strictly into the real types
// and rendered again; each type's fields, tags and pointer-ness compared
// by reflection; quantities and validations compared, and fuzzed, against
// apimachinery's). The binary does not pay its start-up.
//
// A field the emitter does not set is left out: add it here, under the
// API's name, tag and type, and the tests check it.
package kube

// TypeMeta is metav1.TypeMeta.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// ObjectMeta is metav1.ObjectMeta.
type ObjectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// LabelSelector is metav1.LabelSelector.
type LabelSelector struct {
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// Pod is corev1.Pod (no status: the API server's).
type Pod struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec `json:"spec,omitempty"`
}

// PodTemplateSpec is corev1.PodTemplateSpec.
type PodTemplateSpec struct {
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec `json:"spec,omitempty"`
}

// PodSpec is corev1.PodSpec.
type PodSpec struct {
	Volumes                      []Volume            `json:"volumes,omitempty"`
	Containers                   []Container         `json:"containers"`
	RestartPolicy                RestartPolicy       `json:"restartPolicy,omitempty"`
	AutomountServiceAccountToken *bool               `json:"automountServiceAccountToken,omitempty"`
	HostNetwork                  bool                `json:"hostNetwork,omitempty"`
	HostPID                      bool                `json:"hostPID,omitempty"`
	HostIPC                      bool                `json:"hostIPC,omitempty"`
	ShareProcessNamespace        *bool               `json:"shareProcessNamespace,omitempty"`
	SecurityContext              *PodSecurityContext `json:"securityContext,omitempty"`
	EnableServiceLinks           *bool               `json:"enableServiceLinks,omitempty"`
	HostUsers                    *bool               `json:"hostUsers,omitempty"`
}

// RestartPolicy is corev1.RestartPolicy.
type RestartPolicy string

const (
	RestartPolicyAlways RestartPolicy = "Always"
	RestartPolicyNever  RestartPolicy = "Never"
)

// Container is corev1.Container.
type Container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image,omitempty"`
	Command         []string             `json:"command,omitempty"`
	Args            []string             `json:"args,omitempty"`
	WorkingDir      string               `json:"workingDir,omitempty"`
	Ports           []ContainerPort      `json:"ports,omitempty"`
	Env             []EnvVar             `json:"env,omitempty"`
	Resources       ResourceRequirements `json:"resources,omitempty"`
	VolumeMounts    []VolumeMount        `json:"volumeMounts,omitempty"`
	ImagePullPolicy PullPolicy           `json:"imagePullPolicy,omitempty"`
	SecurityContext *SecurityContext     `json:"securityContext,omitempty"`
	Stdin           bool                 `json:"stdin,omitempty"`
	StdinOnce       bool                 `json:"stdinOnce,omitempty"`
	TTY             bool                 `json:"tty,omitempty"`
}

// PullPolicy is corev1.PullPolicy.
type PullPolicy string

const PullIfNotPresent PullPolicy = "IfNotPresent"

// Protocol is corev1.Protocol.
type Protocol string

const (
	ProtocolTCP Protocol = "TCP"
	ProtocolUDP Protocol = "UDP"
)

// ContainerPort is corev1.ContainerPort.
type ContainerPort struct {
	Name          string   `json:"name,omitempty"`
	ContainerPort int32    `json:"containerPort"`
	Protocol      Protocol `json:"protocol,omitempty"`
}

// EnvVar is corev1.EnvVar.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is corev1.EnvVarSource.
type EnvVarSource struct {
	ConfigMapKeyRef *ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
	SecretKeyRef    *SecretKeySelector    `json:"secretKeyRef,omitempty"`
}

// LocalObjectReference is corev1.LocalObjectReference.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

// ConfigMapKeySelector is corev1.ConfigMapKeySelector.
type ConfigMapKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key"`
	Optional             *bool  `json:"optional,omitempty"`
}

// SecretKeySelector is corev1.SecretKeySelector.
type SecretKeySelector struct {
	LocalObjectReference `json:",inline"`
	Key                  string `json:"key"`
	Optional             *bool  `json:"optional,omitempty"`
}

// ResourceRequirements is corev1.ResourceRequirements.
type ResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// ResourceName is corev1.ResourceName.
type ResourceName string

const (
	ResourceCPU    ResourceName = "cpu"
	ResourceMemory ResourceName = "memory"
)

// ResourceList is corev1.ResourceList.
type ResourceList map[ResourceName]Quantity

// SecurityContext is corev1.SecurityContext.
type SecurityContext struct {
	Capabilities             *Capabilities   `json:"capabilities,omitempty"`
	Privileged               *bool           `json:"privileged,omitempty"`
	RunAsUser                *int64          `json:"runAsUser,omitempty"`
	RunAsGroup               *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot             *bool           `json:"runAsNonRoot,omitempty"`
	ReadOnlyRootFilesystem   *bool           `json:"readOnlyRootFilesystem,omitempty"`
	AllowPrivilegeEscalation *bool           `json:"allowPrivilegeEscalation,omitempty"`
	SeccompProfile           *SeccompProfile `json:"seccompProfile,omitempty"`
}

// PodSecurityContext is corev1.PodSecurityContext.
type PodSecurityContext struct {
	RunAsUser                *int64                    `json:"runAsUser,omitempty"`
	RunAsGroup               *int64                    `json:"runAsGroup,omitempty"`
	RunAsNonRoot             *bool                     `json:"runAsNonRoot,omitempty"`
	SupplementalGroupsPolicy *SupplementalGroupsPolicy `json:"supplementalGroupsPolicy,omitempty"`
	FSGroup                  *int64                    `json:"fsGroup,omitempty"`
	SeccompProfile           *SeccompProfile           `json:"seccompProfile,omitempty"`
}

// SupplementalGroupsPolicy is corev1.SupplementalGroupsPolicy.
type SupplementalGroupsPolicy string

const SupplementalGroupsPolicyStrict SupplementalGroupsPolicy = "Strict"

// Capability is corev1.Capability.
type Capability string

// Capabilities is corev1.Capabilities.
type Capabilities struct {
	Drop []Capability `json:"drop,omitempty"`
}

// SeccompProfileType is corev1.SeccompProfileType.
type SeccompProfileType string

const SeccompProfileTypeRuntimeDefault SeccompProfileType = "RuntimeDefault"

// SeccompProfile is corev1.SeccompProfile.
type SeccompProfile struct {
	Type SeccompProfileType `json:"type"`
}

// Volume is corev1.Volume.
type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is corev1.VolumeSource.
type VolumeSource struct {
	HostPath              *HostPathVolumeSource              `json:"hostPath,omitempty"`
	EmptyDir              *EmptyDirVolumeSource              `json:"emptyDir,omitempty"`
	Secret                *SecretVolumeSource                `json:"secret,omitempty"`
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	ConfigMap             *ConfigMapVolumeSource             `json:"configMap,omitempty"`
}

// KeyToPath is corev1.KeyToPath.
type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
}

// SecretVolumeSource is corev1.SecretVolumeSource.
type SecretVolumeSource struct {
	SecretName  string `json:"secretName,omitempty"`
	DefaultMode *int32 `json:"defaultMode,omitempty"`
	Optional    *bool  `json:"optional,omitempty"`
}

// ConfigMapVolumeSource is corev1.ConfigMapVolumeSource.
type ConfigMapVolumeSource struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
	DefaultMode          *int32      `json:"defaultMode,omitempty"`
	Optional             *bool       `json:"optional,omitempty"`
}

// SecretType is corev1.SecretType.
type SecretType string

const SecretTypeOpaque SecretType = "Opaque"

// Secret is corev1.Secret.
type Secret struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	Type       SecretType        `json:"type,omitempty"`
}

// ConfigMap is corev1.ConfigMap.
type ConfigMap struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
}

// HostPathType is corev1.HostPathType.
type HostPathType string

const HostPathDirectory HostPathType = "Directory"

// HostPathVolumeSource is corev1.HostPathVolumeSource.
type HostPathVolumeSource struct {
	Path string        `json:"path"`
	Type *HostPathType `json:"type,omitempty"`
}

// StorageMedium is corev1.StorageMedium.
type StorageMedium string

const StorageMediumMemory StorageMedium = "Memory"

// EmptyDirVolumeSource is corev1.EmptyDirVolumeSource.
type EmptyDirVolumeSource struct {
	Medium    StorageMedium `json:"medium,omitempty"`
	SizeLimit *Quantity     `json:"sizeLimit,omitempty"`
}

// PersistentVolumeClaimVolumeSource is corev1.PersistentVolumeClaimVolumeSource.
type PersistentVolumeClaimVolumeSource struct {
	ClaimName string `json:"claimName"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// RecursiveReadOnlyMode is corev1.RecursiveReadOnlyMode.
type RecursiveReadOnlyMode string

const RecursiveReadOnlyEnabled RecursiveReadOnlyMode = "Enabled"

// VolumeMount is corev1.VolumeMount.
type VolumeMount struct {
	Name              string                 `json:"name"`
	ReadOnly          bool                   `json:"readOnly,omitempty"`
	RecursiveReadOnly *RecursiveReadOnlyMode `json:"recursiveReadOnly,omitempty"`
	MountPath         string                 `json:"mountPath"`
	SubPath           string                 `json:"subPath,omitempty"`
}

// Service is corev1.Service (no status: the API server's).
type Service struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       ServiceSpec `json:"spec,omitempty"`
}

// ServiceType is corev1.ServiceType.
type ServiceType string

const ServiceTypeClusterIP ServiceType = "ClusterIP"

// ServiceSpec is corev1.ServiceSpec.
type ServiceSpec struct {
	Ports     []ServicePort     `json:"ports,omitempty"`
	Selector  map[string]string `json:"selector,omitempty"`
	ClusterIP string            `json:"clusterIP,omitempty"`
	Type      ServiceType       `json:"type,omitempty"`
}

// ServicePort is corev1.ServicePort. TargetPort has no omitempty: the
// API's is a struct (intstr.IntOrString), which encoding/json never omits.
type ServicePort struct {
	Name       string      `json:"name,omitempty"`
	Protocol   Protocol    `json:"protocol,omitempty"`
	Port       int32       `json:"port"`
	TargetPort IntOrString `json:"targetPort"`
}

// Deployment is appsv1.Deployment (no status: the API server's).
type Deployment struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       DeploymentSpec `json:"spec,omitempty"`
}

// DeploymentSpec is appsv1.DeploymentSpec.
type DeploymentSpec struct {
	Replicas *int32             `json:"replicas,omitempty"`
	Selector *LabelSelector     `json:"selector"`
	Template PodTemplateSpec    `json:"template"`
	Strategy DeploymentStrategy `json:"strategy,omitempty"`
}

// DeploymentStrategyType is appsv1.DeploymentStrategyType.
type DeploymentStrategyType string

const RecreateDeploymentStrategyType DeploymentStrategyType = "Recreate"

// DeploymentStrategy is appsv1.DeploymentStrategy.
type DeploymentStrategy struct {
	Type DeploymentStrategyType `json:"type,omitempty"`
}

// NetworkPolicy is networkingv1.NetworkPolicy.
type NetworkPolicy struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       NetworkPolicySpec `json:"spec,omitempty"`
}

// PolicyType is networkingv1.PolicyType.
type PolicyType string

const (
	PolicyTypeIngress PolicyType = "Ingress"
	PolicyTypeEgress  PolicyType = "Egress"
)

// NetworkPolicySpec is networkingv1.NetworkPolicySpec.
type NetworkPolicySpec struct {
	PodSelector LabelSelector              `json:"podSelector"`
	Ingress     []NetworkPolicyIngressRule `json:"ingress,omitempty"`
	Egress      []NetworkPolicyEgressRule  `json:"egress,omitempty"`
	PolicyTypes []PolicyType               `json:"policyTypes,omitempty"`
}

// NetworkPolicyIngressRule is networkingv1.NetworkPolicyIngressRule.
type NetworkPolicyIngressRule struct {
	Ports []NetworkPolicyPort `json:"ports,omitempty"`
	From  []NetworkPolicyPeer `json:"from,omitempty"`
}

// NetworkPolicyEgressRule is networkingv1.NetworkPolicyEgressRule.
type NetworkPolicyEgressRule struct {
	Ports []NetworkPolicyPort `json:"ports,omitempty"`
	To    []NetworkPolicyPeer `json:"to,omitempty"`
}

// NetworkPolicyPeer is networkingv1.NetworkPolicyPeer.
type NetworkPolicyPeer struct {
	PodSelector       *LabelSelector `json:"podSelector,omitempty"`
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
	IPBlock           *IPBlock       `json:"ipBlock,omitempty"`
}

// NetworkPolicyPort is networkingv1.NetworkPolicyPort.
type NetworkPolicyPort struct {
	Protocol *Protocol    `json:"protocol,omitempty"`
	Port     *IntOrString `json:"port,omitempty"`
}

// IPBlock is networkingv1.IPBlock.
type IPBlock struct {
	CIDR   string   `json:"cidr"`
	Except []string `json:"except,omitempty"`
}

// IntOrString is intstr.IntOrString holding an int (intstr.FromInt32),
// which marshals as a JSON number; the emitter never writes a named port.
type IntOrString int32
