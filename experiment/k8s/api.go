package k8s

// The Kubernetes API objects the manifests use, reduced to the fields they
// set, with the API's field names. k8s.io/api's types would make the
// wanlab binary 12.6 MB (36 %) larger for three objects; the tests decode
// what these write into k8s.io/api's own types, strictly, so that a field
// the API does not have, or one in the wrong place, fails there.

// ObjectMeta is metav1.ObjectMeta's name, namespace and labels.
type ObjectMeta struct {
	Name      string            `yaml:"name,omitempty"`
	Namespace string            `yaml:"namespace,omitempty"`
	Labels    map[string]string `yaml:"labels,omitempty"`
}

// ConfigMap is core/v1 ConfigMap.
type ConfigMap struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   ObjectMeta        `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
}

// Job is batch/v1 Job.
type Job struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   ObjectMeta `yaml:"metadata"`
	Spec       JobSpec    `yaml:"spec"`
}

// JobSpec is batch/v1 JobSpec.
type JobSpec struct {
	CompletionMode       string            `yaml:"completionMode,omitempty"`
	Completions          *int32            `yaml:"completions,omitempty"`
	Parallelism          *int32            `yaml:"parallelism,omitempty"`
	BackoffLimit         *int32            `yaml:"backoffLimit,omitempty"`
	BackoffLimitPerIndex *int32            `yaml:"backoffLimitPerIndex,omitempty"`
	PodReplacementPolicy string            `yaml:"podReplacementPolicy,omitempty"`
	PodFailurePolicy     *PodFailurePolicy `yaml:"podFailurePolicy,omitempty"`
	Template             PodTemplateSpec   `yaml:"template"`
}

// PodFailurePolicy is batch/v1 PodFailurePolicy: the first rule that
// matches a failed pod decides.
type PodFailurePolicy struct {
	Rules []PodFailurePolicyRule `yaml:"rules"`
}

// PodFailurePolicyRule is batch/v1 PodFailurePolicyRule.
type PodFailurePolicyRule struct {
	Action          string             `yaml:"action"`
	OnExitCodes     *OnExitCodes       `yaml:"onExitCodes,omitempty"`
	OnPodConditions []OnPodConditionIs `yaml:"onPodConditions,omitempty"`
}

// OnExitCodes is batch/v1 PodFailurePolicyOnExitCodesRequirement.
type OnExitCodes struct {
	ContainerName string  `yaml:"containerName,omitempty"`
	Operator      string  `yaml:"operator"`
	Values        []int32 `yaml:"values"`
}

// OnPodConditionIs is batch/v1 PodFailurePolicyOnPodConditionsPattern.
type OnPodConditionIs struct {
	Type   string `yaml:"type"`
	Status string `yaml:"status"`
}

// PodTemplateSpec is core/v1 PodTemplateSpec.
type PodTemplateSpec struct {
	Metadata ObjectMeta `yaml:"metadata"`
	Spec     PodSpec    `yaml:"spec"`
}

// PodSpec is core/v1 PodSpec.
type PodSpec struct {
	RestartPolicy  string            `yaml:"restartPolicy"`
	NodeSelector   map[string]string `yaml:"nodeSelector,omitempty"`
	Affinity       *Affinity         `yaml:"affinity,omitempty"`
	InitContainers []Container       `yaml:"initContainers,omitempty"`
	Containers     []Container       `yaml:"containers"`
	Volumes        []Volume          `yaml:"volumes"`
}

// Affinity is core/v1 Affinity.
type Affinity struct {
	PodAntiAffinity *PodAntiAffinity `yaml:"podAntiAffinity,omitempty"`
}

// PodAntiAffinity is core/v1 PodAntiAffinity.
type PodAntiAffinity struct {
	Required []PodAffinityTerm `yaml:"requiredDuringSchedulingIgnoredDuringExecution"`
}

// PodAffinityTerm is core/v1 PodAffinityTerm. A NamespaceSelector that is
// empty ({}) selects every namespace; nil, only the pod's own.
type PodAffinityTerm struct {
	LabelSelector     LabelSelector  `yaml:"labelSelector"`
	NamespaceSelector *LabelSelector `yaml:"namespaceSelector,omitempty"`
	TopologyKey       string         `yaml:"topologyKey"`
}

// LabelSelector is metav1.LabelSelector's matchLabels.
type LabelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels,omitempty"`
}

// Container is core/v1 Container.
type Container struct {
	Name            string           `yaml:"name"`
	Image           string           `yaml:"image"`
	Command         []string         `yaml:"command"`
	Resources       *Resources       `yaml:"resources,omitempty"`
	SecurityContext *SecurityContext `yaml:"securityContext,omitempty"`
	VolumeMounts    []VolumeMount    `yaml:"volumeMounts"`
}

// Resources is core/v1 ResourceRequirements' requests, in Kubernetes'
// quantity syntax ("2", "1Gi").
type Resources struct {
	Requests map[string]string `yaml:"requests"`
}

// SecurityContext is core/v1 SecurityContext's privileged.
type SecurityContext struct {
	Privileged bool `yaml:"privileged"`
}

// VolumeMount is core/v1 VolumeMount.
type VolumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	ReadOnly  bool   `yaml:"readOnly,omitempty"`
}

// Volume is core/v1 Volume, from a ConfigMap or a claim.
type Volume struct {
	Name                  string                 `yaml:"name"`
	ConfigMap             *ConfigMapVolume       `yaml:"configMap,omitempty"`
	PersistentVolumeClaim *PersistentVolumeClaim `yaml:"persistentVolumeClaim,omitempty"`
}

// ConfigMapVolume is core/v1 ConfigMapVolumeSource.
type ConfigMapVolume struct {
	Name string `yaml:"name"`
}

// PersistentVolumeClaim is core/v1 PersistentVolumeClaimVolumeSource.
type PersistentVolumeClaim struct {
	ClaimName string `yaml:"claimName"`
}
