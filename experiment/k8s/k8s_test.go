package k8s

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const experimentText = "name: E1 tbf/sweep\nvars:\n  delay: [5ms, 15ms, 25ms]\ntests: [{test: ping}]\n"

func testSweep() Sweep {
	return Sweep{
		Name: "E1 tbf/sweep", File: "examples/e1.yaml", Content: []byte(experimentText),
		Cases: 5, Shards: 3, Image: "registry.example/wanlab:v1", Namespace: "lab",
		Claim: "sweeps", NodeSelector: map[string]string{"wanlab.io/lab": "true"},
	}
}

// decoded is a manifest stream read back the way the API server reads
// it: each document into its type, strictly.
type decoded struct {
	configMap     *corev1.ConfigMap
	shards, merge *batchv1.Job
}

// decode splits a YAML stream into its documents (apimachinery's reader,
// as kubectl's) and decodes each into the k8s.io/api type its kind names,
// refusing unknown and duplicate fields: a field the API does not have, or
// one in the wrong place, fails here.
func decode(t *testing.T, stream []byte) decoded {
	t.Helper()
	var d decoded
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var kinds []string
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, tm.APIVersion+" "+tm.Kind)
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			d.configMap = new(corev1.ConfigMap)
			obj = d.configMap
		case "batch/v1 Job":
			j := new(batchv1.Job)
			if d.shards == nil {
				d.shards = j
			} else {
				d.merge = j
			}
			obj = j
		default:
			t.Fatalf("unexpected document %s %s:\n%s", tm.APIVersion, tm.Kind, doc)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s does not decode strictly: %v\n%s", tm.Kind, err, doc)
		}
	}
	if want := []string{"v1 ConfigMap", "batch/v1 Job", "batch/v1 Job"}; !slices.Equal(kinds, want) {
		t.Fatalf("documents %q, want %q", kinds, want)
	}
	return d
}

func write(t *testing.T, s Sweep) (*Manifests, []byte) {
	t.Helper()
	m, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := m.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	return m, b.Bytes()
}

// The check is strict: a field the API does not know fails the decoding,
// so the tests below would see a misspelt field.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	_, y := write(t, testSweep())
	bad := bytes.Replace(y, []byte("completionMode: Indexed"), []byte("completionMode: Indexed\n  completionMod: Indexed"), 1)
	if bytes.Equal(bad, y) {
		t.Fatal("no completionMode in the shards' Job")
	}
	var j batchv1.Job
	docs := bytes.Split(bad, []byte("\n---\n"))
	if err := yaml.UnmarshalStrict(docs[1], &j); err == nil || !strings.Contains(err.Error(), "completionMod") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
	if err := yaml.Unmarshal(docs[1], &j); err != nil {
		t.Errorf("the lenient decoding fails too, so the strict one proves nothing: %v", err)
	}
}

func TestShardsJob(t *testing.T) {
	s := testSweep()
	m, y := write(t, s)
	d := decode(t, y)
	j := d.shards
	if j.Name != "e1-tbf-sweep-shards" || j.Namespace != "lab" {
		t.Errorf("Job %s/%s, want lab/e1-tbf-sweep-shards", j.Namespace, j.Name)
	}
	sp := j.Spec
	if sp.CompletionMode == nil || *sp.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", sp.CompletionMode)
	}
	if sp.Completions == nil || sp.Parallelism == nil || *sp.Completions != 3 || *sp.Parallelism != 3 {
		t.Errorf("completions %v, parallelism %v; want 3 and 3 (one index per shard, all at once)", sp.Completions, sp.Parallelism)
	}
	// Kubernetes accepts backoffLimitPerIndex and podFailurePolicy only
	// with restartPolicy Never (the Job API's field documentation).
	if sp.BackoffLimitPerIndex == nil || *sp.BackoffLimitPerIndex != Retries || sp.BackoffLimit != nil {
		t.Errorf("backoffLimitPerIndex %v, backoffLimit %v; want %d per index and no Job-wide limit", sp.BackoffLimitPerIndex, sp.BackoffLimit, Retries)
	}
	if sp.PodReplacementPolicy == nil || *sp.PodReplacementPolicy != batchv1.Failed {
		t.Errorf("podReplacementPolicy %v, want Failed: a new pod only once the old one has ended", sp.PodReplacementPolicy)
	}
	pod := sp.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	checkFailurePolicy(t, sp.PodFailurePolicy, batchv1.PodFailurePolicyActionFailIndex, "shard", []int32{1, 2})

	// Hard anti-affinity: the term selects the shard pods themselves (of
	// any experiment and namespace) on one hostname, so no node takes two.
	aa := pod.Affinity.PodAntiAffinity
	if aa == nil || len(aa.RequiredDuringSchedulingIgnoredDuringExecution) != 1 || len(aa.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Fatalf("anti-affinity %+v; want one required term", aa)
	}
	term := aa.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if term.TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("topologyKey %q", term.TopologyKey)
	}
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	other := decode(t, must(write(t, Sweep{Name: "other", File: "o.yaml", Content: []byte("x"), Cases: 2, Shards: 2, Image: "i", Namespace: "elsewhere"}))).shards
	if !sel.Matches(k8slabels.Set(sp.Template.Labels)) || !sel.Matches(k8slabels.Set(other.Spec.Template.Labels)) {
		t.Errorf("the anti-affinity %v does not select the shard pods %v, %v", sel, sp.Template.Labels, other.Spec.Template.Labels)
	}
	if sel.Matches(k8slabels.Set(d.merge.Spec.Template.Labels)) {
		t.Errorf("the anti-affinity %v selects the merge pod %v", sel, d.merge.Spec.Template.Labels)
	}
	if ns := term.NamespaceSelector; ns == nil || len(ns.MatchLabels) != 0 || len(ns.MatchExpressions) != 0 {
		t.Errorf("namespaceSelector %v, want {} (every namespace)", ns)
	}
	if !maps.Equal(pod.NodeSelector, s.NodeSelector) {
		t.Errorf("nodeSelector %v, want %v", pod.NodeSelector, s.NodeSelector)
	}

	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("%d containers, %d init containers; want 1 and 0", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	if c.Image != s.Image || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("container image %q, securityContext %+v; want %q, privileged", c.Image, c.SecurityContext, s.Image)
	}
	if cpu, mem := c.Resources.Requests[corev1.ResourceCPU], c.Resources.Requests[corev1.ResourceMemory]; cpu.MilliValue() != 1000 || mem.Value() != 256<<20 || len(c.Resources.Limits) != 0 {
		t.Errorf("requests cpu %v memory %v, limits %v; want 1, 256Mi and no limits", &cpu, &mem, c.Resources.Limits)
	}
	checkVolumes(t, pod, c, d.configMap.Name, "sweeps")
	if len(pod.Volumes) != 2 {
		t.Errorf("volumes %+v; want the experiment file and the results", pod.Volumes)
	}
	if len(c.Command) != 3 || c.Command[0] != "/bin/sh" || c.Command[1] != "-c" || len(c.Args) != 0 {
		t.Fatalf("command %q args %q; want /bin/sh -c SCRIPT", c.Command, c.Args)
	}
	// The shell makes K from the index Kubernetes gives each pod.
	for index := range 3 {
		k := strconv.Itoa(index + 1)
		got := runShim(t, c.Command, "JOB_COMPLETION_INDEX="+strconv.Itoa(index))
		want := []string{"experiment", "run", "/experiment/e1.yaml", "--shard", k + "/3", "-o", "/results/e1-tbf-sweep/shard-" + k}
		if !slices.Equal(got, want) {
			t.Errorf("index %d runs wanlab %q, want %q", index, got, want)
		}
		if got[len(got)-1] != m.ShardDirs[index] {
			t.Errorf("index %d writes %s, but the merge reads shard %s from %s", index, got[len(got)-1], k, m.ShardDirs[index])
		}
	}
	// Every pod's hostname is the Job's name and its index: a DNS label.
	for _, n := range []string{j.Name, j.Name + "-" + strconv.Itoa(int(*sp.Completions)-1)} {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("%s: %v", n, errs)
		}
	}
}

// runShim runs a container's command with /bin/sh and a wanlab on PATH
// that prints the arguments it is given, and returns them.
func runShim(t *testing.T, command []string, env ...string) []string {
	t.Helper()
	bin := t.TempDir()
	shim := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n"
	if err := os.WriteFile(filepath.Join(bin, Binary), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin"}, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%q: %v", command, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// checkFailurePolicy: disruptions (eviction, preemption, a node drained)
// are ignored, and wanlab's own failure exit statuses end the index or
// the Job.
func checkFailurePolicy(t *testing.T, p *batchv1.PodFailurePolicy, action batchv1.PodFailurePolicyAction, container string, codes []int32) {
	t.Helper()
	if p == nil || len(p.Rules) != 2 {
		t.Fatalf("podFailurePolicy %+v; want two rules", p)
	}
	r := p.Rules[0]
	if r.Action != batchv1.PodFailurePolicyActionIgnore || len(r.OnPodConditions) != 1 || r.OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Errorf("first rule %+v; want Ignore on DisruptionTarget", r)
	}
	r = p.Rules[1]
	if r.Action != action || r.OnExitCodes == nil || r.OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn || !slices.Equal(r.OnExitCodes.Values, codes) {
		t.Fatalf("second rule %+v; want %s on exit codes %v", r, action, codes)
	}
	if got := r.OnExitCodes.ContainerName; (got == nil) != (container == "") || (got != nil && *got != container) {
		t.Errorf("second rule for container %v, want %q", got, container)
	}
}

// checkVolumes: the experiment file read-only from the ConfigMap (if
// configMap is not empty), the results from the claim, each mount naming a
// volume of the pod.
func checkVolumes(t *testing.T, pod corev1.PodSpec, c corev1.Container, configMap, claim string) {
	t.Helper()
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		if _, ok := vols[vm.Name]; !ok {
			t.Errorf("%s mounts %s, which is not a volume of the pod", c.Name, vm.Name)
		}
		mounts[vm.MountPath] = vm
	}
	e, r := mounts[ExperimentMount], mounts[ResultsMount]
	if configMap == "" && len(c.VolumeMounts) != 1 {
		t.Errorf("%s mounts %+v; want only the results", c.Name, c.VolumeMounts)
	}
	if cm := vols[e.Name].ConfigMap; configMap != "" && (cm == nil || cm.Name != configMap || !e.ReadOnly) {
		t.Errorf("%s: %s is %+v (read-only %v), want the ConfigMap %s read-only", c.Name, ExperimentMount, vols[e.Name], e.ReadOnly, configMap)
	}
	if pvc := vols[r.Name].PersistentVolumeClaim; pvc == nil || pvc.ClaimName != claim || r.ReadOnly {
		t.Errorf("%s: %s is %+v, want the claim %s, writable", c.Name, ResultsMount, vols[r.Name], claim)
	}
}

func TestMergeJob(t *testing.T) {
	s := testSweep()
	m, y := write(t, s)
	d := decode(t, y)
	j := d.merge
	if j.Name != "e1-tbf-sweep-merge" || j.Namespace != "lab" || j.Spec.CompletionMode != nil || j.Spec.Completions != nil {
		t.Errorf("merge Job %s/%s, completion mode %v, completions %v; want lab/e1-tbf-sweep-merge, one pod", j.Namespace, j.Name, j.Spec.CompletionMode, j.Spec.Completions)
	}
	pod := j.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || j.Spec.BackoffLimit == nil || *j.Spec.BackoffLimit != Retries {
		t.Errorf("restartPolicy %q, backoffLimit %v", pod.RestartPolicy, j.Spec.BackoffLimit)
	}
	checkFailurePolicy(t, j.Spec.PodFailurePolicy, batchv1.PodFailurePolicyActionFailJob, "", []int32{2})
	dirs := []string{"/results/e1-tbf-sweep/shard-1", "/results/e1-tbf-sweep/shard-2", "/results/e1-tbf-sweep/shard-3"}
	if !slices.Equal(m.ShardDirs, dirs) {
		t.Errorf("shard directories %q, want %q", m.ShardDirs, dirs)
	}
	// Init containers run one after another, each to its end, before the
	// container: waiting, then merging, then the table in the Job's log.
	want := [][]string{
		append([]string{"wanlab", "experiment", "status", "--wait"}, dirs...),
		append(append([]string{"wanlab", "experiment", "merge"}, dirs...), "-o", "/results/e1-tbf-sweep/merged"),
		{"wanlab", "table", "/results/e1-tbf-sweep/merged"},
	}
	all := append(slices.Clone(pod.InitContainers), pod.Containers...)
	if len(pod.InitContainers) != 2 || len(all) != 3 {
		t.Fatalf("%d init containers, %d in all; want 2 and 3", len(pod.InitContainers), len(all))
	}
	for i, c := range all {
		if !slices.Equal(c.Command, want[i]) || len(c.Args) != 0 {
			t.Errorf("container %s runs %q %q, want %q", c.Name, c.Command, c.Args, want[i])
		}
		if c.Image != s.Image || c.SecurityContext != nil {
			t.Errorf("container %s: image %q, securityContext %+v; want %q and no privilege", c.Name, c.Image, c.SecurityContext, s.Image)
		}
		checkVolumes(t, pod, c, "", "sweeps")
	}
	if pod.Affinity != nil || pod.NodeSelector != nil {
		t.Errorf("the merge pod is placed (%+v, %v); it may run anywhere", pod.Affinity, pod.NodeSelector)
	}
}

func TestConfigMapAndNames(t *testing.T) {
	s := testSweep()
	_, y := write(t, s)
	d := decode(t, y)
	cm := d.configMap
	if cm.Name != "e1-tbf-sweep-experiment" || cm.Namespace != "lab" || len(cm.Data) != 1 || cm.Data["e1.yaml"] != experimentText {
		t.Errorf("ConfigMap %s/%s data %q", cm.Namespace, cm.Name, cm.Data)
	}
	for _, o := range []metav1.ObjectMeta{cm.ObjectMeta, d.shards.ObjectMeta, d.merge.ObjectMeta} {
		if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
			t.Errorf("%s: %v", o.Name, errs)
		}
		if o.Labels[LabelInstance] != "e1-tbf-sweep" || o.Labels[LabelName] != "wanlab" {
			t.Errorf("%s: labels %v", o.Name, o.Labels)
		}
	}
	// Without a namespace, the objects go where kubectl puts them.
	s.Namespace, s.Claim = "", ""
	d = decode(t, must(write(t, s)))
	if d.configMap.Namespace != "" || d.shards.Namespace != "" || d.merge.Namespace != "" {
		t.Error("a namespace was set")
	}
	if c := d.shards.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim; c == nil || c.ClaimName != DefaultClaim {
		t.Errorf("the default claim is %+v, want %s", c, DefaultClaim)
	}
}

func must(_ *Manifests, y []byte) []byte { return y }

func TestObjectName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"e1", "e1"},
		{"E2-TBF", "e2-tbf"},
		{"tcp_upload-sweep", "tcp-upload-sweep"},
		{"  Débit / RTT  ", "d-bit-rtt"},
		{"--x--", "x"},
		{strings.Repeat("a", 39) + "-b", strings.Repeat("a", 39)},
		{strings.Repeat("ab", 40), strings.Repeat("ab", 20)},
	} {
		got, err := ObjectName(c.in)
		if err != nil || got != c.want {
			t.Errorf("ObjectName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		// The longest object name and pod hostname it gives are DNS labels.
		for _, n := range []string{got + "-experiment", got + "-shards-99999"} {
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				t.Errorf("%q gives %s: %v", c.in, n, errs)
			}
		}
	}
	for _, in := range []string{"", "___", "日本"} {
		if _, err := ObjectName(in); err == nil || !strings.Contains(err.Error(), "name:") {
			t.Errorf("ObjectName(%q): %v; want an error naming the name: key", in, err)
		}
	}
	if got := fileKey("dir/Sweep 1.yaml"); got != "experiment.yaml" {
		t.Errorf("fileKey of a name with a space = %q", got)
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Sweep)
		want string
	}{
		{"no shard", func(s *Sweep) { s.Shards = 0 }, "--shards 0: give 1 or more"},
		{"more shards than cases", func(s *Sweep) { s.Shards = 6 }, "give --shards 5 or fewer"},
		{"no image", func(s *Sweep) { s.Image = " " }, "--image is empty"},
		{"image with a space", func(s *Sweep) { s.Image = "a b" }, "spaces or control characters"},
		{"namespace", func(s *Sweep) { s.Namespace = "Lab_1" }, `--namespace "Lab_1": a namespace is a DNS label`},
		{"claim", func(s *Sweep) { s.Claim = "Sweeps" }, `--results-claim "Sweeps"`},
		{"selector key", func(s *Sweep) { s.NodeSelector = map[string]string{"a b": "x"} }, "--node-selector a b=x: the label key"},
		{"selector value", func(s *Sweep) { s.NodeSelector = map[string]string{"lab": "x y"} }, "--node-selector lab=x y: the label value"},
		{"name", func(s *Sweep) { s.Name = "**" }, "name: key"},
		{"file too big", func(s *Sweep) { s.Content = make([]byte, MaxConfigMap) }, "at most 1 MiB"},
	} {
		s := testSweep()
		c.edit(&s)
		if _, err := Build(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}

// The Dockerfile builds the image the manifests name: the Go release of
// go.mod, the wanlab command installed where the image's PATH finds it
// as Binary, and a runtime image with the /bin/sh the shard's command
// runs. (No container engine runs here: this checks the recipe against
// the manifests, not that it builds.)
func TestDockerfileMatchesManifests(t *testing.T) {
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	var froms []string
	for _, m := range regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllSubmatch(df, -1) {
		froms = append(froms, string(m[1]))
	}
	if goVer == nil || len(froms) != 2 || froms[0] != "golang:"+string(goVer[1]) {
		t.Errorf("build stages %q; want golang:%s (go.mod's release) first", froms, goVer)
	}
	if !strings.HasPrefix(froms[len(froms)-1], "debian:") {
		t.Errorf("runtime image %s; want Debian's, which has /bin/sh", froms[len(froms)-1])
	}
	if !regexp.MustCompile(`(?m)^RUN CGO_ENABLED=0 go build .*-o /out/wanlab \./cmd/wanlab$`).Match(df) {
		t.Error("the builder does not build ./cmd/wanlab statically into /out/wanlab")
	}
	if _, err := os.Stat("../../cmd/wanlab/main.go"); err != nil {
		t.Error(err)
	}
	// Debian's images set PATH=/usr/local/sbin:/usr/local/bin:...; the
	// Dockerfile must not narrow it.
	if !regexp.MustCompile(`(?m)^COPY --from=build /out/wanlab /usr/local/bin/`+Binary+`$`).Match(df) || regexp.MustCompile(`(?m)^ENV PATH`).Match(df) {
		t.Errorf("the runtime image does not put the binary at /usr/local/bin/%s, on its PATH", Binary)
	}
	m, _ := write(t, testSweep())
	if sh := m.Shards.Spec.Template.Spec.Containers[0].Command[0]; sh != "/bin/sh" {
		t.Errorf("the shard runs %s", sh)
	}
}

// The name checks are Kubernetes' own (apimachinery's validation, which
// the API server applies), on names that pass and names that fail each
// rule.
func TestNameSyntaxIsKubernetes(t *testing.T) {
	long := strings.Repeat("a", 63)
	names := []string{"", "a", "e1", "e1-shards", "-a", "a-", "A", "a_b", "a.b", "a..b", ".a", "a/b", "wanlab.io/lab", "wanlab.io/", "/lab",
		"Wanlab.io/lab", "a/b/c", "lab_1", "x.y-z_1", "1", long, long + "a", long + "." + long, strings.Repeat(long+".", 4) + "a", "é", "a b", "_a", "a_"}
	for _, n := range names {
		if got, want := IsDNSLabel(n), len(validation.IsDNS1123Label(n)) == 0; got != want {
			t.Errorf("IsDNSLabel(%q) = %v, Kubernetes says %v", n, got, want)
		}
		if got, want := IsDNSSubdomain(n), len(validation.IsDNS1123Subdomain(n)) == 0; got != want {
			t.Errorf("IsDNSSubdomain(%q) = %v, Kubernetes says %v", n, got, want)
		}
		if got, want := IsLabelKey(n), len(validation.IsQualifiedName(n)) == 0; got != want {
			t.Errorf("IsLabelKey(%q) = %v, Kubernetes says %v", n, got, want)
		}
		if got, want := IsLabelValue(n), len(validation.IsValidLabelValue(n)) == 0; got != want {
			t.Errorf("IsLabelValue(%q) = %v, Kubernetes says %v", n, got, want)
		}
	}
}
