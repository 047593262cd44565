// Package k8s writes the Kubernetes objects that run an experiment's
// shards on a cluster and merge them: a ConfigMap that holds the
// experiment file, an Indexed Job with one completion index per shard, and
// a merge Job that waits for the shards' results itself.
//
// Kubernetes has no dependency of one Job on another, so the merge Job's
// first init container runs `wanlab experiment status --wait` on the
// shards' directories, which returns once every shard's runs have
// finished; a second init container merges them, and the container prints
// the table (its log is the sweep's table). All three read and write the
// same volume, a PersistentVolumeClaim that every node can mount
// (ReadWriteMany), which outlives the Jobs: a shard pod that is retried,
// on the same node or another, resumes its shard's directory there.
//
// What the shard pods need, and why:
//   - a whole node each: timing fidelity. Kubernetes cannot give a pod a
//     node through resources in general (a node's size is not known when
//     the manifest is written), so the shard pods carry a hard pod
//     anti-affinity against every wanlab shard pod, of any experiment and
//     namespace, on the same kubernetes.io/hostname: two shards never share
//     a node. A node selector can keep them on nodes set aside for the lab.
//     They request a CPU and 256 MiB and set no limits: a CPU limit is a
//     CFS quota, which would stall the router mid-period and show as delay.
//   - privileges: the lab builds network namespaces (CAP_SYS_ADMIN), TUN
//     devices (CAP_NET_ADMIN and /dev/net/tun, which a container's /dev
//     does not have) and writes per-namespace sysctls through /proc/sys,
//     which container runtimes mount read-only in an unprivileged
//     container. Only a privileged container has all three, so the shard
//     container is privileged. wanlab has no rootless mode (user namespaces)
//     yet. The merge pod needs no privilege.
//   - /bin/sh in the image: Kubernetes gives an Indexed Job's pod its
//     0-based index in JOB_COMPLETION_INDEX and has no arithmetic in a
//     container's arguments, so the shard's command is a shell line that
//     makes K = index + 1. The image has a shell anyway: custom tests run
//     their client: and server: commands with /bin/sh -c.
package k8s

import (
	"bytes"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// Where the pods mount the experiment file and the results volume, and
// the command they run (from the image's PATH).
const (
	ExperimentMount = "/experiment"
	ResultsMount    = "/results"
	Binary          = "wanlab"
)

// DefaultClaim is the results volume's claim when none is given.
const DefaultClaim = "wanlab-results"

// UsageExit is wanlab's exit status for bad input (a file that does not
// parse, a directory of another experiment): no retry mends it.
const UsageExit = 2

// FailedExit is wanlab's exit status when runs failed: `experiment run`
// made every run it could and recorded why the others failed, or stopped
// after the same failure three times in a row.
const FailedExit = 1

// Retries is how often a shard's pod is retried before its index is
// failed (backoffLimitPerIndex), and the merge Job's pod. A retried shard
// pod resumes the shard's directory, so a retry costs only the run the
// failure cut off.
const Retries = 3

// MaxConfigMap is the most a ConfigMap holds (Kubernetes refuses a larger
// one).
const MaxConfigMap = 1 << 20

// maxBase bounds the name the objects are named after, so that every
// object's name and an Indexed Job pod's hostname ("NAME-shards-INDEX")
// stay within a DNS label's 63 characters.
const maxBase = 40

// Labels every object carries (Kubernetes' recommended labels), and the
// shard pods' anti-affinity selects on.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	appName        = "wanlab"
)

// Requests of a shard pod, in Kubernetes' quantity syntax, with room
// over what one run takes: rrul through 100 Mbit/s (netem and tbf each
// way) used 4.2 s of CPU in 7.9 s, about half a core, and 44 MB at most.
// They order scheduling and eviction; the node is the shard's anyway.
const (
	ShardCPU    = "1"
	ShardMemory = "256Mi"
)

// Sweep is what the manifests are made of. Build checks it.
type Sweep struct {
	// Name is the experiment's name (its file's name: key); the objects
	// and the results directory are named after it (ObjectName).
	Name string
	// File is the experiment file's name, whose last element is the
	// ConfigMap's key and the file's name in the pods; Content its text.
	File    string
	Content []byte
	// Cases is the number of the experiment's cases, and Shards how many
	// shards they are dealt into (1 <= Shards <= Cases).
	Cases, Shards int
	// Image is the container image with wanlab (on its PATH) and /bin/sh.
	Image string
	// Namespace, if not empty, is every object's namespace; empty, the
	// objects go where kubectl puts them.
	Namespace string
	// Claim is the results volume's PersistentVolumeClaim (DefaultClaim
	// when empty).
	Claim string
	// NodeSelector keeps the shard pods on the nodes with these labels.
	NodeSelector map[string]string
	// ExperimentMount and ResultsMount move the mounts (defaults: the
	// constants of the same name).
	ExperimentMount, ResultsMount string
}

// Manifests are the objects that run a sweep, in the order to apply them.
type Manifests struct {
	// Base is the name the objects are named after.
	Base string
	// Dir is the sweep's directory on the results volume, ShardDirs the
	// shards' directories in it (shard K at index K-1), and Merged the
	// merged directory.
	Dir, Merged string
	ShardDirs   []string
	ConfigMap   *ConfigMap
	Shards      *Job
	Merge       *Job
}

var nonLabel = regexp.MustCompile(`[^a-z0-9]+`)

// ObjectName derives a DNS-1123 label from an experiment's name: lower
// case, every run of other characters a hyphen, at most 40 characters.
func ObjectName(experiment string) (string, error) {
	s := strings.Trim(nonLabel.ReplaceAllString(strings.ToLower(experiment), "-"), "-")
	if len(s) > maxBase {
		s = strings.TrimRight(s[:maxBase], "-")
	}
	if s == "" {
		return "", fmt.Errorf("the experiment's name %q has no letter or digit to name the Kubernetes objects after: give the file a name: key such as name: e1", experiment)
	}
	return s, nil
}

var configKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// fileKey returns the experiment file's name in the ConfigMap and the
// pods: its last element when Kubernetes takes it as a key, else
// experiment.yaml.
func fileKey(file string) string {
	base := path.Base(strings.ReplaceAll(file, "\\", "/"))
	if configKey.MatchString(base) && base != "." && base != ".." && len(base) <= 253 {
		return base
	}
	return "experiment.yaml"
}

// Build checks a sweep and makes its objects.
func Build(s Sweep) (*Manifests, error) {
	base, err := ObjectName(s.Name)
	if err != nil {
		return nil, err
	}
	if err := check(s); err != nil {
		return nil, err
	}
	if s.Claim == "" {
		s.Claim = DefaultClaim
	}
	if s.ExperimentMount == "" {
		s.ExperimentMount = ExperimentMount
	}
	if s.ResultsMount == "" {
		s.ResultsMount = ResultsMount
	}
	m := &Manifests{Base: base, Dir: path.Join(s.ResultsMount, base)}
	m.Merged = path.Join(m.Dir, "merged")
	for k := 1; k <= s.Shards; k++ {
		m.ShardDirs = append(m.ShardDirs, ShardDir(m.Dir, k))
	}
	key := fileKey(s.File)
	m.ConfigMap = &ConfigMap{
		APIVersion: "v1", Kind: "ConfigMap",
		Metadata: meta(base+"-experiment", s.Namespace, base, "experiment"),
		Data:     map[string]string{key: string(s.Content)},
	}
	m.Shards = shardJob(s, base, path.Join(s.ExperimentMount, key), m.Dir)
	m.Merge = mergeJob(s, base, m)
	return m, nil
}

// ShardDir is shard K's directory in the sweep's directory dir.
func ShardDir(dir string, k int) string { return path.Join(dir, "shard-"+strconv.Itoa(k)) }

// check refuses what Kubernetes or the shards would refuse later, each
// with the fix.
func check(s Sweep) error {
	switch {
	case s.Cases < 1:
		return fmt.Errorf("the experiment has no case to run")
	case s.Shards < 1:
		return fmt.Errorf("--shards %d: give 1 or more shards (each takes a node)", s.Shards)
	case s.Shards > s.Cases:
		return fmt.Errorf("--shards %d: the experiment has %d cases, and a shard without one would hold a node for nothing: give --shards %d or fewer", s.Shards, s.Cases, s.Cases)
	case strings.TrimSpace(s.Image) == "":
		return fmt.Errorf("--image is empty: give the image built from the repository's Dockerfile, e.g. --image registry.example/wanlab:v1")
	case strings.ContainsFunc(s.Image, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("--image %q has spaces or control characters: give an image reference such as registry.example/wanlab:v1", s.Image)
	case len(s.Content)+len(fileKey(s.File)) > MaxConfigMap:
		return fmt.Errorf("%s is %d bytes: the ConfigMap that takes it to the pods holds at most 1 MiB", s.File, len(s.Content))
	}
	if s.Namespace != "" && !IsDNSLabel(s.Namespace) {
		return fmt.Errorf("--namespace %q: a namespace is a DNS label: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit", s.Namespace)
	}
	if s.Claim != "" && !IsDNSSubdomain(s.Claim) {
		return fmt.Errorf("--results-claim %q: a claim's name is at most 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", s.Claim)
	}
	for k, v := range s.NodeSelector {
		if !IsLabelKey(k) {
			return fmt.Errorf("--node-selector %s=%s: the label key is an optional DNS prefix and '/', then at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit (e.g. wanlab.io/lab)", k, v)
		}
		if !IsLabelValue(v) {
			return fmt.Errorf("--node-selector %s=%s: the label value is empty or at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit", k, v)
		}
	}
	return nil
}

// Kubernetes' name syntaxes (k8s.io/apimachinery/pkg/util/validation;
// the tests hold these to it).
var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	labelName    = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
)

// IsDNSLabel reports whether s is an RFC 1123 label, as Kubernetes names
// namespaces and Jobs.
func IsDNSLabel(s string) bool { return len(s) <= 63 && dnsLabel.MatchString(s) }

// IsDNSSubdomain reports whether s is an RFC 1123 subdomain, as Kubernetes
// names most objects.
func IsDNSSubdomain(s string) bool { return len(s) <= 253 && dnsSubdomain.MatchString(s) }

// IsLabelKey reports whether s is a label key: an optional DNS subdomain
// prefix and '/', then a name.
func IsLabelKey(s string) bool {
	prefix, name, ok := strings.Cut(s, "/")
	if !ok {
		prefix, name = "", s
	} else if prefix == "" || !IsDNSSubdomain(prefix) {
		return false
	}
	return len(name) <= 63 && labelName.MatchString(name)
}

// IsLabelValue reports whether s is a label value.
func IsLabelValue(s string) bool { return s == "" || len(s) <= 63 && labelName.MatchString(s) }

func meta(name, namespace, base, component string) ObjectMeta {
	return ObjectMeta{Name: name, Namespace: namespace, Labels: labels(base, component)}
}

func labels(base, component string) map[string]string {
	return map[string]string{LabelName: appName, LabelInstance: base, LabelComponent: component}
}

func ptr[T any](v T) *T { return &v }

// volumes are the results volume and, for the shards, the experiment file
// (read-only).
func volumes(s Sweep, base string, experiment bool) ([]Volume, []VolumeMount) {
	vols := []Volume{{Name: "results", PersistentVolumeClaim: &PersistentVolumeClaim{ClaimName: s.Claim}}}
	mounts := []VolumeMount{{Name: "results", MountPath: s.ResultsMount}}
	if experiment {
		vols = append(vols, Volume{Name: "experiment", ConfigMap: &ConfigMapVolume{Name: base + "-experiment"}})
		mounts = append(mounts, VolumeMount{Name: "experiment", MountPath: s.ExperimentMount, ReadOnly: true})
	}
	return vols, mounts
}

// disrupted is the rule that replaces a pod that was evicted, preempted or
// lost with its node (the DisruptionTarget condition) without counting
// it: not the sweep's failure.
var disrupted = PodFailurePolicyRule{Action: "Ignore", OnPodConditions: []OnPodConditionIs{{Type: "DisruptionTarget", Status: "True"}}}

// ShardScript is the shard container's shell line: shard K of n, K the
// pod's JOB_COMPLETION_INDEX + 1, into dir/shard-K. exec makes wanlab the
// container's first process, so that the SIGTERM of a pod being deleted
// or evicted reaches it: it ends the run in progress, keeps what it
// measured as partial, and the next pod resumes.
func ShardScript(file string, n int, dir string) string {
	out := `"` + dir + `/shard-$K"`
	if !shellSafe.MatchString(dir) {
		out = shellQuote(dir) + `"/shard-$K"`
	}
	return fmt.Sprintf(`K=$((JOB_COMPLETION_INDEX + 1)) && exec %s experiment run %s --shard "$K/%d" -o %s`, Binary, shellQuote(file), n, out)
}

var shellSafe = regexp.MustCompile(`^[-A-Za-z0-9_./=:@%+,]+$`)

// shellQuote quotes s for sh(1) when it needs it.
func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func shardJob(s Sweep, base, file, dir string) *Job {
	vols, mounts := volumes(s, base, true)
	return &Job{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: meta(base+"-shards", s.Namespace, base, "shard"),
		Spec: JobSpec{
			CompletionMode: "Indexed",
			Completions:    ptr(int32(s.Shards)),
			Parallelism:    ptr(int32(s.Shards)),
			// Each shard is retried on its own: a shard that keeps
			// failing does not use up the others' retries, nor stop
			// them as a Job-wide backoffLimit would.
			BackoffLimitPerIndex: ptr(int32(Retries)),
			// A replacement pod starts once the one it replaces has
			// ended, so two pods never hold one shard's directory.
			PodReplacementPolicy: "Failed",
			PodFailurePolicy: &PodFailurePolicy{Rules: []PodFailurePolicyRule{
				disrupted,
				// wanlab's own verdicts are final: 2 is bad input, 1
				// runs that failed (or a shard that stopped after the
				// same failure three times). A retry would run the
				// failed runs again while the merge, which starts once
				// every run of every shard is made, may be reading the
				// directory; running them again is a person's
				// decision, as with `experiment run`. Anything else
				// (killed, out of memory) is retried, and the new pod
				// resumes the shard.
				{Action: "FailIndex", OnExitCodes: &OnExitCodes{ContainerName: "shard", Operator: "In", Values: []int32{FailedExit, UsageExit}}},
			}},
			Template: PodTemplateSpec{
				Metadata: ObjectMeta{Labels: labels(base, "shard")},
				Spec: PodSpec{
					RestartPolicy: "Never",
					NodeSelector:  s.NodeSelector,
					Affinity: &Affinity{PodAntiAffinity: &PodAntiAffinity{Required: []PodAffinityTerm{{
						LabelSelector: LabelSelector{MatchLabels: map[string]string{LabelName: appName, LabelComponent: "shard"}},
						// Every namespace's shards: two sweeps never
						// share a node either.
						NamespaceSelector: &LabelSelector{},
						TopologyKey:       "kubernetes.io/hostname",
					}}}},
					Containers: []Container{{
						Name:            "shard",
						Image:           s.Image,
						Command:         []string{"/bin/sh", "-c", ShardScript(file, s.Shards, dir)},
						Resources:       &Resources{Requests: map[string]string{"cpu": ShardCPU, "memory": ShardMemory}},
						SecurityContext: &SecurityContext{Privileged: true},
						VolumeMounts:    mounts,
					}},
					Volumes: vols,
				},
			},
		},
	}
}

func mergeJob(s Sweep, base string, m *Manifests) *Job {
	vols, mounts := volumes(s, base, false)
	container := func(name string, args ...string) Container {
		return Container{Name: name, Image: s.Image, Command: append([]string{Binary}, args...), VolumeMounts: mounts}
	}
	wait := append([]string{"experiment", "status", "--wait"}, m.ShardDirs...)
	merge := append(append([]string{"experiment", "merge"}, m.ShardDirs...), "-o", m.Merged)
	return &Job{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: meta(base+"-merge", s.Namespace, base, "merge"),
		Spec: JobSpec{
			BackoffLimit:         ptr(int32(Retries)),
			PodReplacementPolicy: "Failed",
			PodFailurePolicy: &PodFailurePolicy{Rules: []PodFailurePolicyRule{
				disrupted,
				// Directories of another experiment, or a merged
				// directory there already: retrying cannot mend it.
				{Action: "FailJob", OnExitCodes: &OnExitCodes{Operator: "In", Values: []int32{UsageExit}}},
			}},
			Template: PodTemplateSpec{
				Metadata: ObjectMeta{Labels: labels(base, "merge")},
				Spec: PodSpec{
					RestartPolicy: "Never",
					// Init containers run one after the other, each to
					// its end, before the container.
					InitContainers: []Container{container("wait", wait...), container("merge", merge...)},
					Containers:     []Container{container("table", "table", m.Merged)},
					Volumes:        vols,
				},
			},
		},
	}
}

// WriteYAML writes the objects as one YAML stream, one document each.
func (m *Manifests) WriteYAML(w io.Writer) error {
	var b bytes.Buffer
	for i, o := range []any{m.ConfigMap, m.Shards, m.Merge} {
		y, err := yaml.MarshalWithOptions(o, yaml.IndentSequence(true), yaml.UseLiteralStyleIfMultiline(true))
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	_, err := w.Write(b.Bytes())
	return err
}
