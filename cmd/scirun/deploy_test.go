package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// Per-session memory and the process's base, as deploy/kubernetes/deployment.yaml derives them
// (docs/security.md, "Memory bound per session").
const (
	deploySessionMiB = 210
	deployBaseMiB    = 128
)

type k8sContainer struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	Resources      struct {
		Limits   map[string]string `yaml:"limits"`
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type k8sObject struct {
	Kind string `yaml:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				Grace      int            `yaml:"terminationGracePeriodSeconds"`
				Containers []k8sContainer `yaml:"containers"`
				Volumes    []struct {
					Name   string `yaml:"name"`
					Secret *struct {
						SecretName string `yaml:"secretName"`
					} `yaml:"secret"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct {
			Name       string `yaml:"name"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// The Kubernetes manifests and the Dockerfile (Docker cannot run here: checked statically): every
// scirun flag the Deployment passes exists and the command line passes scirun's own checks; the
// probes ask for the paths the --metrics endpoint serves on its port; the memory limit covers
// --max-sessions sessions; the TLS material comes from a Secret; the grace period outlasts
// --drain-timeout; the Service targets the container's ports; the image runs static binaries.
func TestDeployManifests(t *testing.T) {
	root := testenv.RepoRoot(t)
	var objs []k8sObject
	files, _ := filepath.Glob(filepath.Join(root, "deploy", "kubernetes", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		for {
			var o k8sObject
			if err := dec.Decode(&o); err != nil {
				if err.Error() == "EOF" {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			objs = append(objs, o)
		}
	}
	var dep, svc *k8sObject
	for i := range objs {
		switch objs[i].Kind {
		case "Deployment":
			dep = &objs[i]
		case "Service":
			svc = &objs[i]
		}
	}
	if dep == nil || svc == nil {
		t.Fatalf("want a Deployment and a Service in deploy/kubernetes, got %d objects", len(objs))
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	ct := pod.Containers[0]

	// Every flag exists, and the whole command line passes scirun's checks (the program file
	// itself is not read by check).
	c, err := parse(ct.Args)
	if err != nil {
		t.Fatalf("the Deployment's args do not parse as scirun's: %v", err)
	}
	fs := newFlagSet(&config{})
	re := regexp.MustCompile(`^--?([a-z0-9-]+)`)
	for _, a := range ct.Args {
		if m := re.FindStringSubmatch(a); m != nil && fs.Lookup(m[1]) == nil {
			t.Errorf("the Deployment passes --%s, which scirun does not have", m[1])
		}
	}
	if err := c.check(); err != nil {
		t.Fatalf("the Deployment's command line: %v", err)
	}
	if c.party != 0 || !c.serveMany || c.metrics == "" {
		t.Fatalf("the Deployment does not run a --serve server with --metrics: %+v", c)
	}

	// Probes: the endpoint's paths, on the --metrics port.
	ports := map[string]int{}
	for _, p := range ct.Ports {
		ports[p.Name] = p.ContainerPort
	}
	metricsPort := c.metrics[strings.LastIndex(c.metrics, ":")+1:]
	listenPort := c.listen[strings.LastIndex(c.listen, ":")+1:]
	for _, pr := range []struct {
		name  string
		probe *k8sProbe
		path  string
	}{{"liveness", ct.LivenessProbe, "/healthz"}, {"readiness", ct.ReadinessProbe, "/readyz"}} {
		if pr.probe == nil {
			t.Errorf("no %s probe", pr.name)
			continue
		}
		if pr.probe.HTTPGet.Path != pr.path {
			t.Errorf("%s probe on %q, want %s", pr.name, pr.probe.HTTPGet.Path, pr.path)
		}
		port := pr.probe.HTTPGet.Port
		if name, ok := port.(string); ok {
			port = ports[name]
		}
		if itoa(port) != metricsPort {
			t.Errorf("%s probe on port %v, --metrics listens on %s", pr.name, pr.probe.HTTPGet.Port, metricsPort)
		}
	}
	if itoa(ports["scirun"]) != listenPort {
		t.Errorf("container port scirun %d, --listen %s", ports["scirun"], c.listen)
	}
	for _, p := range svc.Spec.Ports {
		if name, ok := p.TargetPort.(string); ok && ports[name] == 0 {
			t.Errorf("the Service targets port %q, which the container does not name", name)
		}
	}

	// Memory: --max-sessions sessions fit in the limit, and --memory-limit lies below it.
	limit, err := parseSize(strings.ReplaceAll(ct.Resources.Limits["memory"], "Gi", "GiB"))
	if err != nil {
		limit, err = parseSize(strings.ReplaceAll(ct.Resources.Limits["memory"], "Mi", "MiB"))
	}
	if err != nil {
		t.Fatalf("memory limit %q: %v", ct.Resources.Limits["memory"], err)
	}
	need := int64(c.maxSessions*deploySessionMiB+deployBaseMiB) << 20
	if limit < need {
		t.Errorf("memory limit %d MiB < %d sessions x %d MiB + %d MiB", limit>>20, c.maxSessions, deploySessionMiB, deployBaseMiB)
	}
	if ml, _ := parseSize(c.memLimit); ml == 0 || ml >= limit {
		t.Errorf("--memory-limit %q should be set below the container's limit", c.memLimit)
	}

	// TLS from a Secret, mounted where the flags point.
	secretMount := ""
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			for _, m := range ct.VolumeMounts {
				if m.Name == v.Name {
					secretMount = m.MountPath
				}
			}
		}
	}
	for _, f := range []string{c.tlsCert, c.tlsKey, c.tlsClientCA} {
		if secretMount == "" || !strings.HasPrefix(f, secretMount+"/") {
			t.Errorf("TLS file %q is not in a mounted Secret (%q)", f, secretMount)
		}
	}
	if pod.Grace <= int(c.drainTimeout.Seconds())+1 {
		t.Errorf("terminationGracePeriodSeconds %d does not outlast --drain-timeout %v", pod.Grace, c.drainTimeout)
	}

	// The image: static binaries, both commands, scirun as the entrypoint.
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	for _, want := range []string{"CGO_ENABLED=0", "./cmd/scirun", "./cmd/athosc", `ENTRYPOINT ["/usr/local/bin/scirun"]`} {
		if !strings.Contains(df, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^FROM (gcr\.io/distroless/static\S*|scratch)\s*$`).MatchString(df) {
		t.Error("the Dockerfile's final image is not distroless/static or scratch")
	}
	if len(ct.Command) != 0 {
		t.Errorf("the container overrides the image's entrypoint: %v", ct.Command)
	}
}

func itoa(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case string:
		return x
	}
	return ""
}
