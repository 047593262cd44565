package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"wanlab/experiment"
	"wanlab/experiment/k8s"
	"wanlab/internal/infile"
	"wanlab/internal/outfile"
)

type experimentK8sFlags struct {
	image, namespace, claim, out string
	shards                       int
	nodeSelector                 []string
}

func newExperimentK8sCommand(s *streams) *cobra.Command {
	var f experimentK8sFlags
	c := &cobra.Command{
		Use:   "k8s FILE --image IMAGE [--shards N] [--namespace NS] [--results-claim PVC] [--node-selector KEY=VALUE]... [-o FILE]",
		Short: "Write the Kubernetes Jobs that run an experiment's shards on a cluster and merge them",
		Long: `k8s checks the experiment file as 'experiment run' does, then writes one
YAML stream for 'kubectl apply -f': a ConfigMap holding the file, an
Indexed Job whose completion index K-1 runs shard K of N into
/results/NAME/shard-K, and a merge Job whose init containers wait for
every shard's runs ('wanlab experiment status --wait') and merge them into
/results/NAME/merged, and whose log is the table. NAME is the file's
name: key made a DNS label.

/results is the PersistentVolumeClaim --results-claim (default
wanlab-results), which every node must be able to mount (ReadWriteMany)
and which outlives the Jobs: a shard pod that is retried resumes its
directory. Two shard pods never share a node (a hard anti-affinity on
the node's hostname); --node-selector keeps them on the nodes set aside
for the lab. The shard containers are privileged: the lab makes network
namespaces, TUN devices and per-namespace sysctls (wanlab has no
rootless mode yet). IMAGE is built from the repository's Dockerfile.`,
		Example: `  wanlab experiment k8s e1.yaml --image registry.example/wanlab:v1 --shards 8 -o e1-k8s.yaml
  kubectl apply -f e1-k8s.yaml && kubectl logs -f job/e1-merge -c wait
  wanlab experiment k8s e1.yaml --image registry.example/wanlab:v1 --shards 4 --node-selector wanlab.io/lab=true | kubectl apply -f -`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error { return experimentK8s(s, args[0], &f) },
	}
	fs := c.Flags()
	fs.StringVar(&f.image, "image", "", "the container image with wanlab on its PATH and /bin/sh (built from the Dockerfile)")
	fs.IntVar(&f.shards, "shards", 1, "N: how many shards, each a pod on a node of its own (at most the number of cases)")
	fs.StringVar(&f.namespace, "namespace", "", "the namespace of every object (default: kubectl's)")
	fs.StringVar(&f.claim, "results-claim", k8s.DefaultClaim, "the PersistentVolumeClaim (ReadWriteMany) mounted at /results, which keeps the results")
	fs.StringArrayVar(&f.nodeSelector, "node-selector", nil, "KEY=VALUE: run the shards only on nodes with this label (repeatable)")
	fs.StringVarP(&f.out, "output", "o", "-", "the YAML file to write (- for the standard output)")
	return c
}

func experimentK8s(s *streams, file string, f *experimentK8sFlags) error {
	if f.image == "" {
		return usagef("k8s needs --image IMAGE, the image built from the repository's Dockerfile (e.g. --image registry.example/wanlab:v1)")
	}
	sel := map[string]string{}
	for _, kv := range f.nodeSelector {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usagef("--node-selector %q: write KEY=VALUE, a label of the nodes the shards may run on, e.g. --node-selector wanlab.io/lab=true", kv)
		}
		sel[k] = v
	}
	fo := outfile.Options{Label: "--output", Suggest: "sweep-k8s.yaml", Stdout: s.out}
	if err := outfile.Check(f.out, fo); err != nil {
		return usagef("%v", err)
	}
	if err := notAnInput("--output", f.out, file); err != nil {
		return err
	}
	content, err := infile.Read(file, maxExperimentFile)
	if err != nil {
		return usagef("cannot read the experiment file: %v", err)
	}
	plan, err := experiment.Load(file, content, experiment.LoadOptions{Backend: newRunner(s), TC: tcOptions()})
	if err != nil {
		if _, ok := experiment.AsErrors(err); ok {
			return usagef("%v", err)
		}
		return err
	}
	m, err := k8s.Build(k8s.Sweep{
		Name: plan.Name, File: file, Content: content, Cases: len(plan.Cases), Shards: f.shards,
		Image: f.image, Namespace: f.namespace, Claim: f.claim, NodeSelector: sel,
	})
	if err != nil {
		return usagef("%v", err)
	}
	for _, w := range podWarnings(plan) {
		fmt.Fprintf(s.err, "warning: %s\n", w)
	}
	var b bytes.Buffer
	if err := m.WriteYAML(&b); err != nil {
		return err
	}
	ctx, stop := outputContext()
	defer stop()
	written, err := writeOutput(ctx, f.out, fo, b.Bytes())
	if err != nil {
		return err
	}
	if written != "-" {
		fmt.Fprintf(s.err, "%s: %s of %s; apply with: kubectl apply -f %s\n", outfile.Printable(written), plural(f.shards, "shard"), plan.Name, outfile.Printable(written))
	}
	fmt.Fprintf(s.err, "the merge waits in: kubectl logs -f job/%s -c wait; the table: kubectl logs job/%s\n", m.Merge.Metadata.Name, m.Merge.Metadata.Name)
	return nil
}

// podOnly are the run options that name something on the machine that
// runs wanlab, which a pod does not have unless the image or the volume
// brings it, with what the pod needs.
var podOnly = map[string]string{
	"trace_up":    "its trace file",
	"trace_down":  "its trace file",
	"up_script":   "its script",
	"down_script": "its script",
	"script":      "its script",
	"up_dev":      "a network device of the node",
	"down_dev":    "a network device of the node",
	"lab":         "a testbed already running (wanlab up) on the node",
}

// podWarnings says which of the plan's options name what the pods may not
// have: they see only the experiment file (at /experiment) and the results
// volume.
func podWarnings(p *experiment.Plan) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range p.Cases {
		for _, r := range c.Runs {
			for _, o := range r.Options {
				need, ok := podOnly[o.Key]
				if !ok || seen[o.Key] {
					continue
				}
				seen[o.Key] = true
				out = append(out, fmt.Sprintf("%s: %s %s needs %s in the pod: the pods have only the experiment file and the results volume (/results), so put it in the image or on the volume and name it by that path",
					p.FileName, o.Key, strings.Join(o.Values, ","), need))
			}
		}
	}
	slices.Sort(out)
	return out
}
