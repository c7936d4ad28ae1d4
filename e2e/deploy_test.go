package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// deployDir is the repository's deploy folder.
const deployDir = "../deploy"

// objects are the Kubernetes objects of a set of manifests, decoded strictly.
type objects struct {
	statefulSets    []appsv1.StatefulSet
	services        []corev1.Service
	secrets         []corev1.Secret
	serviceMonitors []monitoringv1.ServiceMonitor
}

// decodeManifests splits YAML documents and decodes each into its Go type:
// unknown fields and wrong types fail.
func decodeManifests(t *testing.T, source string, raw []byte) objects {
	t.Helper()
	var out objects
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("%s document %d: %v", source, i, err)
		}
		var into any
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 StatefulSet":
			out.statefulSets = append(out.statefulSets, appsv1.StatefulSet{})
			into = &out.statefulSets[len(out.statefulSets)-1]
		case "v1 Service":
			out.services = append(out.services, corev1.Service{})
			into = &out.services[len(out.services)-1]
		case "v1 Secret":
			out.secrets = append(out.secrets, corev1.Secret{})
			into = &out.secrets[len(out.secrets)-1]
		case "monitoring.coreos.com/v1 ServiceMonitor":
			out.serviceMonitors = append(out.serviceMonitors, monitoringv1.ServiceMonitor{})
			into = &out.serviceMonitors[len(out.serviceMonitors)-1]
		case "kustomize.config.k8s.io/v1beta1 Kustomization":
			continue // rendered and so checked by kustomize itself
		default:
			t.Fatalf("%s document %d: unexpected object %s %s", source, i, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
			t.Fatalf("%s document %d (%s): %v", source, i, meta.Kind, err)
		}
	}
	return out
}

func stripComments(doc string) string {
	var lines []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// checkObjects asserts what operations.md §6 requires of the objects.
func checkObjects(t *testing.T, source string, o objects, wantMonitor bool) {
	t.Helper()
	if len(o.statefulSets) != 1 {
		t.Fatalf("%s: %d StatefulSets", source, len(o.statefulSets))
	}
	sts := o.statefulSets[0]
	pod := sts.Spec.Template.Spec
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Errorf("%s: replicas must be 1 (single writer)", source)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers", source, len(pod.Containers))
	}
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"run", "--api-token-file=/etc/eventstore/secrets/token", "--data-directory=/var/lib/eventstore",
		"--http-enabled", "--https-enabled=false", "--shutdown-drain-period=", "--shutdown-timeout="} {
		if !strings.Contains(args, want) {
			t.Errorf("%s: args %q lack %s", source, args, want)
		}
	}
	if strings.Contains(args, "--api-token=") {
		t.Errorf("%s: the token must not be an argument", source)
	}
	drain, timeout := durationArg(t, c.Args, "--shutdown-drain-period="), durationArg(t, c.Args, "--shutdown-timeout=")
	grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	if grace <= drain+timeout {
		t.Errorf("%s: terminationGracePeriodSeconds %v not above drain %v + timeout %v", source, grace, drain, timeout)
	}
	ready := c.ReadinessProbe
	if ready == nil || ready.HTTPGet == nil || ready.HTTPGet.Path != "/api/v1/ping" || ready.HTTPGet.Port.String() != "http" {
		t.Fatalf("%s: readiness probe %+v", source, ready)
	}
	if drain < time.Duration(ready.PeriodSeconds*ready.FailureThreshold)*time.Second {
		t.Errorf("%s: drain %v shorter than the readiness probe needs to fail", source, drain)
	}
	if live := c.LivenessProbe; live == nil || live.HTTPGet == nil || live.HTTPGet.Path != "/api/v1/ping" || live.FailureThreshold <= ready.FailureThreshold {
		t.Errorf("%s: liveness probe %+v", source, live)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		t.Errorf("%s: no preStop hook is wanted", source)
	}
	if i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" }); i < 0 || c.Ports[i].ContainerPort != 3000 {
		t.Errorf("%s: container port http %+v", source, c.Ports)
	}
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.FSGroup == nil {
		t.Errorf("%s: pod security context %+v", source, sc)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: container must have a read-only root file system", source)
	}
	var tokenVolume string
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			tokenVolume = v.Name
			if v.Secret.DefaultMode == nil || *v.Secret.DefaultMode != 0o440 {
				t.Errorf("%s: token volume mode %v, want 0440", source, v.Secret.DefaultMode)
			}
		}
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == tokenVolume && m.MountPath == "/etc/eventstore/secrets" && m.ReadOnly && m.SubPath == "" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("%s: the token Secret is not mounted read-only at /etc/eventstore/secrets without subPath", source)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || !slices.Contains(sts.Spec.VolumeClaimTemplates[0].Spec.AccessModes, corev1.ReadWriteOnce) {
		t.Errorf("%s: volume claim templates %+v", source, sts.Spec.VolumeClaimTemplates)
	}
	if len(o.services) != 2 {
		t.Errorf("%s: %d Services, want a headless and a client one", source, len(o.services))
	}
	for _, svc := range o.services {
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].TargetPort.String() != "http" {
			t.Errorf("%s: Service %s ports %+v", source, svc.Name, svc.Spec.Ports)
		}
	}
	if !wantMonitor {
		return
	}
	if len(o.serviceMonitors) != 1 {
		t.Fatalf("%s: %d ServiceMonitors", source, len(o.serviceMonitors))
	}
	ep := o.serviceMonitors[0].Spec.Endpoints
	if len(ep) != 1 || ep[0].Port != "http" || ep[0].Path != "/api/v1/health" || !slices.Equal(ep[0].Params["format"], []string{"openmetrics"}) {
		t.Fatalf("%s: ServiceMonitor endpoints %+v", source, ep)
	}
	auth := ep[0].Authorization
	if auth == nil || auth.Type != "Bearer" || auth.Credentials == nil || auth.Credentials.Key != "token" {
		t.Errorf("%s: ServiceMonitor authorization %+v", source, auth)
	}
}

func durationArg(t *testing.T, args []string, prefix string) time.Duration {
	t.Helper()
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			d, err := time.ParseDuration(strings.TrimPrefix(a, prefix))
			if err != nil {
				t.Fatalf("%s: %v", a, err)
			}
			return d
		}
	}
	t.Fatalf("no argument %s", prefix)
	return 0
}

// tool finds a command-line tool on PATH or in EVENTSTORE_TOOLS, where
// scripts/test builds the ones that come from the Go module proxy.
func tool(t *testing.T, name string) string {
	t.Helper()
	if dir := os.Getenv("EVENTSTORE_TOOLS"); dir != "" {
		if path := filepath.Join(dir, name); fileExists(path) {
			return path
		}
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is required (scripts/test provides it): %v", name, err)
	}
	return path
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// command runs a tool and returns its standard output.
func command(t *testing.T, path string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s%s", filepath.Base(path), args, err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

func TestKubernetesManifests(t *testing.T) {
	var all []byte
	files, err := filepath.Glob(filepath.Join(deployDir, "kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeManifests(t, f, raw)
		if filepath.Base(f) == "secret.example.yaml" && (len(objs.secrets) != 1 || objs.secrets[0].Name != "eventstore-api-token") {
			t.Errorf("secret example %+v", objs.secrets)
		}
		if filepath.Base(f) != "secret.example.yaml" {
			all = append(append(all, raw...), "\n---\n"...)
		}
	}
	checkObjects(t, "deploy/kubernetes", decodeManifests(t, "deploy/kubernetes", all), true)

	rendered := command(t, tool(t, "kustomize"), "build", filepath.Join(deployDir, "kubernetes"))
	objs := decodeManifests(t, "kustomize build", rendered)
	checkObjects(t, "kustomize build", objs, true)
	if creds := objs.serviceMonitors[0].Spec.Endpoints[0].Authorization.Credentials; creds.Name != "eventstore-api-token" {
		t.Errorf("ServiceMonitor token Secret %q", creds.Name)
	}
}

func TestHelmChart(t *testing.T) {
	helm := tool(t, "helm")
	chart := filepath.Join(deployDir, "helm", "eventstore")
	command(t, helm, "lint", "--strict", chart)
	command(t, helm, "lint", "--strict", chart, "--set", "serviceMonitor.enabled=true,ui.enabled=true,token.value=abc")

	plain := decodeManifests(t, "helm template", command(t, helm, "template", "eventstore", chart))
	checkObjects(t, "helm template", plain, false)
	if len(plain.serviceMonitors) != 0 || len(plain.secrets) != 0 {
		t.Errorf("defaults render %d ServiceMonitors, %d Secrets", len(plain.serviceMonitors), len(plain.secrets))
	}
	if slices.Contains(plain.statefulSets[0].Spec.Template.Spec.Containers[0].Args, "--with-ui") {
		t.Error("the UI is on by default")
	}

	full := decodeManifests(t, "helm template (all on)", command(t, helm, "template", "eventstore", chart,
		"--set", "serviceMonitor.enabled=true,ui.enabled=true,token.value=s3cret-token,storage.size=20Gi"))
	checkObjects(t, "helm template (all on)", full, true)
	if !slices.Contains(full.statefulSets[0].Spec.Template.Spec.Containers[0].Args, "--with-ui") {
		t.Error("ui.enabled does not add --with-ui")
	}
	if len(full.secrets) != 1 || full.secrets[0].StringData["token"]+string(full.secrets[0].Data["token"]) != "s3cret-token" {
		t.Errorf("token.value renders %+v", full.secrets)
	}
	secretName := full.secrets[0].Name
	if got := full.serviceMonitors[0].Spec.Endpoints[0].Authorization.Credentials.Name; got != secretName {
		t.Errorf("ServiceMonitor reads the token from %q, the chart made %q", got, secretName)
	}
	if size := full.statefulSets[0].Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String(); size != "20Gi" {
		t.Errorf("storage.size renders %s", size)
	}
}

// TestManifestProbesAreServed starts the binary with the StatefulSet's own
// arguments (paths moved into a temp dir) and checks that the probes' path
// answers on the port the manifests name, without a token.
func TestManifestProbesAreServed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", "statefulset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sts := decodeManifests(t, "statefulset.yaml", raw).statefulSets[0]
	c := sts.Spec.Template.Spec.Containers[0]
	dir := t.TempDir()
	token := harness.WriteFile(t, dir, "token", harness.Token+"\n")
	var args []string
	for _, a := range c.Args {
		a = strings.Replace(a, "/etc/eventstore/secrets/token", token, 1)
		a = strings.Replace(a, "/var/lib/eventstore", filepath.Join(dir, "data"), 1)
		args = append(args, a)
	}
	// The container port is the binary's default; the test binds a free one.
	_, help, _ := harness.Run(t, bin, 10*time.Second, "run", "--help")
	if !regexp.MustCompile(`--http-port value[^\n]*\(default: 3000\)`).MatchString(help) {
		t.Fatalf("the binary's default HTTP port is not the manifests' 3000:\n%s", help)
	}
	inst := harness.Start(t, bin, append(args, "--http-port=0")...)
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if probe == nil {
			continue
		}
		if r := inst.Do("GET", probe.HTTPGet.Path, "", ""); r.StatusCode != 200 {
			t.Errorf("probe %s: %d", probe.HTTPGet.Path, r.StatusCode)
		}
	}
	if r := inst.Do("GET", "/api/v1/health?format=openmetrics", harness.Token, ""); r.StatusCode != 200 {
		t.Errorf("the ServiceMonitor's path: %d", r.StatusCode)
	}
}

// TestPrometheusScrapes runs a real Prometheus (Debian's package) on
// loopback that scrapes the service the way the ServiceMonitor does:
// /api/v1/health?format=openmetrics with the token as bearer credentials.
func TestPrometheusScrapes(t *testing.T) {
	prometheus := tool(t, "prometheus")
	dir := t.TempDir()
	inst := harness.Start(t, bin, harness.Dev()...)
	token := harness.WriteFile(t, dir, "token", harness.Token)
	target := strings.TrimPrefix(inst.URL("http"), "http://")
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: eventstore
    metrics_path: /api/v1/health
    params:
      format: [openmetrics]
    authorization:
      type: Bearer
      credentials_file: %s
    static_configs:
      - targets: ['%s']
`, token, target)
	configFile := harness.WriteFile(t, dir, "prometheus.yml", config)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	listener.Close()
	cmd := exec.Command(prometheus, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	query := func(q string) []json.RawMessage {
		resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + q)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var out struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out.Data.Result
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		up := query(`up%7Bjob%3D%22eventstore%22%7D%3D%3D1`)
		info := query(`eventstore_build_info%7Bjob%3D%22eventstore%22%7D`)
		if len(up) == 1 && len(info) == 1 {
			if !strings.Contains(string(info[0]), `"version":"dev"`) {
				t.Errorf("eventstore_build_info series %s", info[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus did not scrape the service within 30 s (up %s, build info %s)\n%s", up, info, logs.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
	if m := metrics(t, inst); m[`eventstore_http_requests_total{code="200",method="GET",route="/api/v1/health"}`] < 1 {
		t.Errorf("the service saw no scrape: %v", m)
	}
}
