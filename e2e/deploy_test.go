package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/eventstore-service/eventstore/e2e/harness"
	"github.com/eventstore-service/eventstore/modules/store/pgstore"
	"github.com/eventstore-service/eventstore/modules/store/pgstore/pgtest"
)

// deployDir is the repository's deploy folder.
const deployDir = "../deploy"

// objects are the Kubernetes objects of a set of manifests, decoded strictly.
type objects struct {
	statefulSets    []appsv1.StatefulSet
	deployments     []appsv1.Deployment
	budgets         []policyv1.PodDisruptionBudget
	services        []corev1.Service
	secrets         []corev1.Secret
	serviceMonitors []monitoringv1.ServiceMonitor
	configMaps      []corev1.ConfigMap
	prometheusRules []monitoringv1.PrometheusRule
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
			into = grow(&out.statefulSets)
		case "apps/v1 Deployment":
			into = grow(&out.deployments)
		case "policy/v1 PodDisruptionBudget":
			into = grow(&out.budgets)
		case "v1 Service":
			into = grow(&out.services)
		case "v1 Secret":
			into = grow(&out.secrets)
		case "monitoring.coreos.com/v1 ServiceMonitor":
			into = grow(&out.serviceMonitors)
		case "v1 ConfigMap":
			into = grow(&out.configMaps)
		case "monitoring.coreos.com/v1 PrometheusRule":
			into = grow(&out.prometheusRules)
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

// grow appends a zero element to list and returns it, to decode into.
func grow[T any](list *[]T) *T {
	*list = append(*list, *new(T))
	return &(*list)[len(*list)-1]
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

// Mount points of the Secrets in the pod, as the manifests name them.
const (
	tokenFile       = "/etc/eventstore/secrets/token"
	postgresURLFile = "/etc/eventstore/postgres/url"
)

// checkObjects asserts what docs/reference.md §6 requires of the objects of
// the single-node setup: one StatefulSet on a volume claim, a headless and
// a client Service, nothing of PostgreSQL mode.
func checkObjects(t *testing.T, source string, o objects, wantMonitor bool) {
	t.Helper()
	if len(o.statefulSets) != 1 || len(o.deployments) != 0 || len(o.budgets) != 0 {
		t.Fatalf("%s: %d StatefulSets, %d Deployments, %d PodDisruptionBudgets; want the StatefulSet alone", source, len(o.statefulSets), len(o.deployments), len(o.budgets))
	}
	sts := o.statefulSets[0]
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Errorf("%s: replicas must be 1 (single writer)", source)
	}
	c := checkPod(t, source, sts.Spec.Template)
	if !slices.Contains(c.Args, "--data-directory=/var/lib/eventstore") || slices.ContainsFunc(c.Args, isPostgresArg) {
		t.Errorf("%s: args %q: want the data directory and no PostgreSQL flag", source, c.Args)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || !slices.Contains(sts.Spec.VolumeClaimTemplates[0].Spec.AccessModes, corev1.ReadWriteOnce) {
		t.Errorf("%s: volume claim templates %+v", source, sts.Spec.VolumeClaimTemplates)
	}
	if len(o.services) != 2 {
		t.Errorf("%s: %d Services, want a headless and a client one", source, len(o.services))
	}
	checkServices(t, source, o.services, sts.Spec.Template.Labels)
	if wantMonitor {
		checkMonitor(t, source, o, sts.Spec.Template.Labels)
	}
}

// checkPostgresObjects asserts what docs/reference.md §6 and §9 require of the
// objects of PostgreSQL mode: a Deployment of stateless nodes (no data
// directory, no volume claim) with the URL from a Secret mounted as a file,
// a PodDisruptionBudget over them, a client Service and no headless one,
// nothing of the single-node setup. It returns the Deployment and the name
// of the URL Secret.
func checkPostgresObjects(t *testing.T, source string, o objects, wantMonitor bool) (appsv1.Deployment, string) {
	t.Helper()
	if len(o.deployments) != 1 || len(o.statefulSets) != 0 {
		t.Fatalf("%s: %d Deployments, %d StatefulSets; want the Deployment alone", source, len(o.deployments), len(o.statefulSets))
	}
	d := o.deployments[0]
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Fatalf("%s: replicas unset or below 2: PostgreSQL mode runs several nodes", source)
	}
	replicas := int(*d.Spec.Replicas)
	if !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("%s: the Deployment's selector %v does not select its pods %v", source, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	if u := d.Spec.Strategy.RollingUpdate; u == nil || u.MaxUnavailable == nil || u.MaxUnavailable.IntValue() != 0 {
		t.Errorf("%s: a rollout must keep every replica serving (maxUnavailable 0): %+v", source, d.Spec.Strategy)
	}
	c := checkPod(t, source, d.Spec.Template)
	for _, want := range []string{"--storage-backend=postgres", "--postgres-url-file=" + postgresURLFile} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("%s: args %q lack %s", source, c.Args, want)
		}
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--data-directory") || strings.HasPrefix(a, "--postgres-url=") {
			t.Errorf("%s: argument %q: PostgreSQL mode keeps no data directory and takes the URL from a file", source, a)
		}
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "EVENTSTORE_") {
			t.Errorf("%s: environment variable %s: the flags are arguments, the secrets files", source, e.Name)
		}
	}
	urlSecret := fileSecret(t, source, d.Spec.Template, postgresURLFile)
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret == nil && v.EmptyDir == nil {
			t.Errorf("%s: volume %s: the nodes are stateless (Secrets and scratch space only)", source, v.Name)
		}
	}
	if !slices.ContainsFunc(d.Spec.Template.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		return c.TopologyKey == "kubernetes.io/hostname" && c.LabelSelector != nil && selects(c.LabelSelector.MatchLabels, d.Spec.Template.Labels)
	}) {
		t.Errorf("%s: the nodes are not spread over Kubernetes nodes: %+v", source, d.Spec.Template.Spec.TopologySpreadConstraints)
	}
	if len(o.budgets) != 1 {
		t.Fatalf("%s: %d PodDisruptionBudgets", source, len(o.budgets))
	}
	pdb := o.budgets[0].Spec
	if pdb.Selector == nil || !selects(pdb.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("%s: the PodDisruptionBudget's selector %+v does not select the pods %v", source, pdb.Selector, d.Spec.Template.Labels)
	}
	if pdb.MaxUnavailable == nil || pdb.MaxUnavailable.IntValue() < 1 || pdb.MaxUnavailable.IntValue() >= replicas {
		t.Errorf("%s: PodDisruptionBudget maxUnavailable %v with %d replicas: drains must stop some nodes, never all", source, pdb.MaxUnavailable, replicas)
	}
	if len(o.services) != 1 || o.services[0].Spec.ClusterIP == corev1.ClusterIPNone {
		t.Errorf("%s: Services %+v: want one client Service, no headless one", source, o.services)
	}
	checkServices(t, source, o.services, d.Spec.Template.Labels)
	if wantMonitor {
		checkMonitor(t, source, o, d.Spec.Template.Labels)
	}
	return d, urlSecret
}

// isPostgresArg reports whether a is a flag of PostgreSQL mode.
func isPostgresArg(a string) bool {
	return strings.HasPrefix(a, "--storage-backend") || strings.HasPrefix(a, "--postgres-")
}

// checkPod asserts what docs/reference.md §6 and §10 require of the pod of
// either shape: arguments, drain and grace period, probes, security
// context, the token Secret as a file, memory. It returns the container.
func checkPod(t *testing.T, source string, template corev1.PodTemplateSpec) corev1.Container {
	t.Helper()
	pod := template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers", source, len(pod.Containers))
	}
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"run", "--api-token-file=" + tokenFile,
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
	// docs/reference.md §10: without --memory-limit the process takes 90% of the container's
	// memory limit, which must be set, reserved by an equal request, and
	// the one TestStaysWithinThePodsMemory runs the service in.
	limit, request := c.Resources.Limits.Memory(), c.Resources.Requests.Memory()
	if limit.Value() != podMemory || !request.Equal(*limit) {
		t.Errorf("%s: memory request %v and limit %v, want both %d bytes", source, request, limit, podMemory)
	}
	if strings.Contains(args, "--memory-limit") || slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" }) {
		t.Errorf("%s: the memory limit is set explicitly; the manifests rely on the default (90%% of the container's limit)", source)
	}
	fileSecret(t, source, template, tokenFile)
	return c
}

// fileSecret asserts that the directory of file is where a Secret volume is
// mounted read-only, whole (no subPath: a rotated Secret reaches the file),
// readable by owner and group (0440), and returns the Secret's name.
func fileSecret(t *testing.T, source string, template corev1.PodTemplateSpec, file string) string {
	t.Helper()
	pod, dir := template.Spec, filepath.Dir(file)
	c := pod.Containers[0]
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir })
	if i < 0 || !c.VolumeMounts[i].ReadOnly || c.VolumeMounts[i].SubPath != "" {
		t.Errorf("%s: no Secret mounted read-only at %s without subPath: %+v", source, dir, c.VolumeMounts)
		return ""
	}
	j := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if j < 0 || pod.Volumes[j].Secret == nil {
		t.Errorf("%s: the volume at %s is not a Secret", source, dir)
		return ""
	}
	secret := pod.Volumes[j].Secret
	if secret.DefaultMode == nil || *secret.DefaultMode != 0o440 {
		t.Errorf("%s: mode of the Secret at %s %v, want 0440", source, dir, secret.DefaultMode)
	}
	return secret.SecretName
}

// checkServices asserts that every Service serves the port http of the pods
// labelled podLabels.
func checkServices(t *testing.T, source string, services []corev1.Service, podLabels map[string]string) {
	t.Helper()
	for _, svc := range services {
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].TargetPort.String() != "http" {
			t.Errorf("%s: Service %s ports %+v", source, svc.Name, svc.Spec.Ports)
		}
		if !selects(svc.Spec.Selector, podLabels) {
			t.Errorf("%s: Service %s selects %v, not the pods %v", source, svc.Name, svc.Spec.Selector, podLabels)
		}
	}
}

// checkMonitor asserts that the ServiceMonitor scrapes the metrics path with
// the token through exactly one Service, which reaches every pod: so every
// node is scraped, and once.
func checkMonitor(t *testing.T, source string, o objects, podLabels map[string]string) {
	t.Helper()
	if len(o.serviceMonitors) != 1 {
		t.Fatalf("%s: %d ServiceMonitors", source, len(o.serviceMonitors))
	}
	sm := o.serviceMonitors[0].Spec
	ep := sm.Endpoints
	if len(ep) != 1 || ep[0].Port != "http" || ep[0].Path != "/api/v1/health" || !slices.Equal(ep[0].Params["format"], []string{"openmetrics"}) {
		t.Fatalf("%s: ServiceMonitor endpoints %+v", source, ep)
	}
	auth := ep[0].Authorization
	if auth == nil || auth.Type != "Bearer" || auth.Credentials == nil || auth.Credentials.Key != "token" {
		t.Errorf("%s: ServiceMonitor authorization %+v", source, auth)
	}
	var scraped []string
	for _, svc := range o.services {
		if selects(sm.Selector.MatchLabels, svc.Labels) {
			scraped = append(scraped, svc.Name)
			if !selects(svc.Spec.Selector, podLabels) {
				t.Errorf("%s: the ServiceMonitor scrapes Service %s, which does not reach every pod", source, svc.Name)
			}
		}
	}
	if len(scraped) != 1 {
		t.Errorf("%s: the ServiceMonitor selects the Services %v, want exactly one (each pod scraped once)", source, scraped)
	}
}

// selects reports whether a label selector's matchLabels select labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
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

// kustomization decodes the manifests of a kustomize directory under
// deploy/ and what `kustomize build` makes of them: the files (every
// *.yaml but secret.example.yaml, which is not part of the kustomization),
// the built objects, and the example Secrets.
func kustomization(t *testing.T, dir string) (files, built objects, examples []corev1.Secret) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(deployDir, dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	var all []byte
	for _, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		objs := decodeManifests(t, path, raw)
		if filepath.Base(path) == "secret.example.yaml" {
			examples = append(examples, objs.secrets...)
			continue
		}
		all = append(append(all, raw...), "\n---\n"...)
	}
	files = decodeManifests(t, "deploy/"+dir, all)
	built = decodeManifests(t, "kustomize build deploy/"+dir, command(t, tool(t, "kustomize"), "build", filepath.Join(deployDir, dir)))
	return files, built, examples
}

func TestKubernetesManifests(t *testing.T) {
	files, built, examples := kustomization(t, "kubernetes")
	if len(examples) != 1 || examples[0].Name != "eventstore-api-token" {
		t.Errorf("secret example %+v", examples)
	}
	checkObjects(t, "deploy/kubernetes", files, true)
	checkObjects(t, "kustomize build", built, true)
	if creds := built.serviceMonitors[0].Spec.Endpoints[0].Authorization.Credentials; creds.Name != "eventstore-api-token" {
		t.Errorf("ServiceMonitor token Secret %q", creds.Name)
	}
}

// TestKubernetesPostgresManifests checks the kustomization of PostgreSQL
// mode, beside the single-node one: three nodes, the URL from the Secret
// whose example it ships (a URL eventstore accepts), the token Secret of
// the single-node setup.
func TestKubernetesPostgresManifests(t *testing.T) {
	files, built, examples := kustomization(t, "kubernetes/postgres")
	if len(examples) != 1 || examples[0].Name != "eventstore-postgres-url" {
		t.Fatalf("secret example %+v", examples)
	}
	if err := pgstore.CheckURL(examples[0].StringData["url"]); err != nil {
		t.Errorf("the example URL: %v", err)
	}
	for _, o := range []struct {
		source string
		objs   objects
	}{{"deploy/kubernetes/postgres", files}, {"kustomize build deploy/kubernetes/postgres", built}} {
		d, urlSecret := checkPostgresObjects(t, o.source, o.objs, true)
		if *d.Spec.Replicas != 3 {
			t.Errorf("%s: replicas %d, want 3", o.source, *d.Spec.Replicas)
		}
		if urlSecret != examples[0].Name {
			t.Errorf("%s: the URL comes from Secret %q, the example is %q", o.source, urlSecret, examples[0].Name)
		}
		if token := fileSecret(t, o.source, d.Spec.Template, tokenFile); token != "eventstore-api-token" {
			t.Errorf("%s: token Secret %q", o.source, token)
		}
		if creds := o.objs.serviceMonitors[0].Spec.Endpoints[0].Authorization.Credentials; creds.Name != "eventstore-api-token" {
			t.Errorf("%s: ServiceMonitor token Secret %q", o.source, creds.Name)
		}
	}
}

// helmChart is the chart's directory.
var helmChart = filepath.Join(deployDir, "helm", "eventstore")

// helmTemplate renders the chart as release eventstore with args.
func helmTemplate(t *testing.T, source string, args ...string) objects {
	t.Helper()
	return decodeManifests(t, source, command(t, tool(t, "helm"), append([]string{"template", "eventstore", helmChart}, args...)...))
}

func TestHelmChart(t *testing.T) {
	helm := tool(t, "helm")
	command(t, helm, "lint", "--strict", helmChart)
	command(t, helm, "lint", "--strict", helmChart, "--set", "serviceMonitor.enabled=true,ui.enabled=true,token.value=abc")

	plain := helmTemplate(t, "helm template")
	checkObjects(t, "helm template", plain, false)
	if len(plain.serviceMonitors) != 0 || len(plain.secrets) != 0 {
		t.Errorf("defaults render %d ServiceMonitors, %d Secrets", len(plain.serviceMonitors), len(plain.secrets))
	}
	if slices.Contains(plain.statefulSets[0].Spec.Template.Spec.Containers[0].Args, "--with-ui") {
		t.Error("the UI is on by default")
	}

	full := helmTemplate(t, "helm template (all on)", "--set", "serviceMonitor.enabled=true,ui.enabled=true,token.value=s3cret-token,storage.size=20Gi")
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
	if got := fileSecret(t, "helm template (all on)", full.statefulSets[0].Spec.Template, tokenFile); got != secretName {
		t.Errorf("the pod reads the token from %q, the chart made %q", got, secretName)
	}
	if size := full.statefulSets[0].Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String(); size != "20Gi" {
		t.Errorf("storage.size renders %s", size)
	}

	out, err := exec.Command(helm, "template", "eventstore", helmChart, "--set", "storage.backend=pg").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "storage.backend must be pebble or postgres") {
		t.Errorf("storage.backend=pg renders (%v):\n%s", err, out)
	}
}

// TestHelmChartPostgres renders the chart with storage.backend=postgres:
// the Deployment of PostgreSQL mode in place of the StatefulSet, its URL
// Secret referenced, made from a value or taken as it exists, and a changed
// URL value restarting the pods, as a changed token does.
func TestHelmChartPostgres(t *testing.T) {
	helm := tool(t, "helm")
	dir := t.TempDir()
	url := "postgres://eventstore:pw@pg-0.pg:5432,pg-1.pg:5432/eventstore?target_session_attrs=read-write"
	values := func(name, url string) string {
		return harness.WriteFile(t, dir, name, fmt.Sprintf("storage:\n  backend: postgres\n  postgres:\n    url: %q\n    replicas: 5\n", url))
	}
	full, changed := values("full.yaml", url), values("changed.yaml", url+"&connect_timeout=3")
	allOn := "serviceMonitor.enabled=true,ui.enabled=true,token.value=s3cret-token"
	command(t, helm, "lint", "--strict", helmChart, "--set", "storage.backend=postgres")
	command(t, helm, "lint", "--strict", helmChart, "-f", full, "--set", allOn)

	plain := helmTemplate(t, "helm template (postgres)", "--set", "storage.backend=postgres")
	d, urlSecret := checkPostgresObjects(t, "helm template (postgres)", plain, false)
	if *d.Spec.Replicas != 3 || urlSecret != "eventstore-postgres-url" || len(plain.secrets) != 0 || len(plain.serviceMonitors) != 0 {
		t.Errorf("postgres defaults: %d replicas, URL Secret %q, %d Secrets, %d ServiceMonitors", *d.Spec.Replicas, urlSecret, len(plain.secrets), len(plain.serviceMonitors))
	}
	if got := intArg(t, d.Spec.Template.Spec.Containers[0].Args, "--postgres-max-connections="); got != 16 {
		t.Errorf("--postgres-max-connections=%d, want the default 16", got)
	}

	all := helmTemplate(t, "helm template (postgres, all on)", "-f", full, "--set", allOn)
	d, urlSecret = checkPostgresObjects(t, "helm template (postgres, all on)", all, true)
	if *d.Spec.Replicas != 5 {
		t.Errorf("storage.postgres.replicas=5 renders %d", *d.Spec.Replicas)
	}
	i := slices.IndexFunc(all.secrets, func(s corev1.Secret) bool { return s.Name == urlSecret })
	if len(all.secrets) != 2 || i < 0 || all.secrets[i].StringData["url"] != url {
		t.Errorf("storage.postgres.url renders the Secrets %+v; the pods read %q", all.secrets, urlSecret)
	}
	token := fileSecret(t, "helm template (postgres, all on)", d.Spec.Template, tokenFile)
	if !slices.ContainsFunc(all.secrets, func(s corev1.Secret) bool { return s.Name == token && s.StringData["token"] == "s3cret-token" }) ||
		all.serviceMonitors[0].Spec.Endpoints[0].Authorization.Credentials.Name != token {
		t.Errorf("the pods read the token from %q: not the Secret of token.value, or not the ServiceMonitor's", token)
	}
	annotations := d.Spec.Template.Annotations
	if annotations["checksum/api-token"] == "" || annotations["checksum/postgres-url"] == "" {
		t.Errorf("pod annotations %v: want the checksums of both Secrets", annotations)
	}
	again := helmTemplate(t, "helm template (postgres, URL changed)", "-f", changed, "--set", allOn)
	if got := again.deployments[0].Spec.Template.Annotations["checksum/postgres-url"]; got == annotations["checksum/postgres-url"] {
		t.Error("a changed storage.postgres.url leaves the pod template as it was: the pods would keep the old URL")
	}

	existing := helmTemplate(t, "helm template (postgres, existing Secret)", "-f", full, "--set", "storage.postgres.existingSecret=my-url")
	if _, urlSecret := checkPostgresObjects(t, "helm template (postgres, existing Secret)", existing, false); urlSecret != "my-url" || len(existing.secrets) != 0 {
		t.Errorf("existingSecret: the pods read %q, the chart makes %d Secrets", urlSecret, len(existing.secrets))
	}
}

func intArg(t *testing.T, args []string, prefix string) int {
	t.Helper()
	i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, prefix) })
	if i < 0 {
		t.Fatalf("no argument %s in %q", prefix, args)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(args[i], prefix))
	if err != nil {
		t.Fatalf("%s: %v", args[i], err)
	}
	return n
}

// startWithManifestArgs starts the binary with a manifest container's own
// arguments, the paths it names in the pod replaced by files of the test,
// on a free port, and checks that its probes' paths answer without a
// token and the ServiceMonitor's path with it.
func startWithManifestArgs(t *testing.T, c corev1.Container, paths map[string]string) *harness.Instance {
	t.Helper()
	var args []string
	for _, a := range c.Args {
		for from, to := range paths {
			a = strings.Replace(a, from, to, 1)
		}
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
	return inst
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
	dir := t.TempDir()
	startWithManifestArgs(t, sts.Spec.Template.Spec.Containers[0], map[string]string{
		tokenFile:             harness.WriteFile(t, dir, "token", harness.Token+"\n"),
		"/var/lib/eventstore": filepath.Join(dir, "data"),
	})
}

// TestPostgresManifestProbesAreServed starts the binary with the
// Deployment's own arguments, the URL file naming a database of a
// throw-away PostgreSQL: it answers the probes' paths and runs on the pool
// the manifest sizes.
func TestPostgresManifestProbesAreServed(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", "postgres", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := decodeManifests(t, "deployment.yaml", raw).deployments[0].Spec.Template.Spec.Containers[0]
	cluster := pgtest.New(t, pgtest.Options{})
	url, err := cluster.CreateDatabase(context.Background(), "manifest")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inst := startWithManifestArgs(t, c, map[string]string{
		tokenFile:       harness.WriteFile(t, dir, "token", harness.Token+"\n"),
		postgresURLFile: harness.WriteFile(t, dir, "url", url+"\n"),
	})
	if inst.Do("GET", "/api/v1/health", harness.Token, "").StatusCode != 200 {
		t.Error("health does not pass on the database")
	}
	if got, want := metrics(t, inst)["eventstore_postgres_connections_max"], intArg(t, c.Args, "--postgres-max-connections="); got != float64(want) {
		t.Errorf("eventstore_postgres_connections_max %v, the manifest says %d", got, want)
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

// accessFileMount is where both the chart and the kustomize component
// mount the access file's Secret.
const (
	chartAccessFile     = "/etc/eventstore/access/access.yaml"
	kustomizeAccessFile = "/etc/eventstore/secrets/access.yaml"
)

// checkAccessFile asserts that the pod template runs with --access-file at
// file, read from the Secret secret mounted without subPath, and without
// the API token.
func checkAccessFile(t *testing.T, source string, tmpl corev1.PodTemplateSpec, file, secret string) {
	t.Helper()
	args := tmpl.Spec.Containers[0].Args
	if !slices.Contains(args, "--access-file="+file) || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--api-token") }) {
		t.Errorf("%s: args %v, want --access-file=%s and no API token", source, args, file)
	}
	if got := fileSecret(t, source, tmpl, file); got != secret {
		t.Errorf("%s: the access file comes from Secret %q, want %q", source, got, secret)
	}
}

// TestHelmChartAccessFile renders the chart with accessFile.existingSecret,
// on both backends: the access file replaces the token in the pods, and the
// ServiceMonitor scrapes with the token under accessFile.scrapeTokenKey.
func TestHelmChartAccessFile(t *testing.T) {
	command(t, tool(t, "helm"), "lint", "--strict", helmChart, "--set", "accessFile.existingSecret=eventstore-access,serviceMonitor.enabled=true")
	single := helmTemplate(t, "helm template (access file)", "--set", "accessFile.existingSecret=eventstore-access,serviceMonitor.enabled=true")
	checkAccessFile(t, "helm template (access file)", single.statefulSets[0].Spec.Template, chartAccessFile, "eventstore-access")
	if creds := single.serviceMonitors[0].Spec.Endpoints[0].Authorization.Credentials; creds.Name != "eventstore-access" || creds.Key != "scrape-token" {
		t.Errorf("ServiceMonitor credentials %+v", creds)
	}
	if len(single.secrets) != 0 {
		t.Errorf("the chart made %d Secrets beside the access file's", len(single.secrets))
	}
	pg := helmTemplate(t, "helm template (postgres, access file)", "--set",
		"storage.backend=postgres,accessFile.existingSecret=eventstore-access,accessFile.scrapeTokenKey=metrics,serviceMonitor.enabled=true")
	checkAccessFile(t, "helm template (postgres, access file)", pg.deployments[0].Spec.Template, chartAccessFile, "eventstore-access")
	if creds := pg.serviceMonitors[0].Spec.Endpoints[0].Authorization.Credentials; creds.Key != "metrics" {
		t.Errorf("ServiceMonitor credentials %+v", creds)
	}
}

// overlay writes a kustomization of base (a directory of deploy/) with
// component, in namespace unless empty, and returns its directory.
func overlay(t *testing.T, namespace, base, component string) string {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		abs, err := filepath.Abs(filepath.Join(deployDir, p))
		if err == nil {
			abs, err = filepath.Rel(dir, abs)
		}
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	text := fmt.Sprintf("resources:\n  - %s\ncomponents:\n  - %s\n", rel(base), rel(component))
	if namespace != "" {
		text = "namespace: " + namespace + "\n" + text
	}
	harness.WriteFile(t, dir, "kustomization.yaml", text)
	return dir
}

// TestKubernetesAccessFile builds an overlay of each setup with the
// access-file component: the access file replaces the token Secret in the
// pods and the ServiceMonitor, and the Secret example holds an access file
// that eventstore accepts.
func TestKubernetesAccessFile(t *testing.T) {
	kustomize := tool(t, "kustomize")
	for _, base := range []string{"kubernetes", "kubernetes/postgres"} {
		source := "kustomize build (" + base + " + access-file)"
		built := decodeManifests(t, source, command(t, kustomize, "build", overlay(t, "", base, "kubernetes/access-file")))
		tmpl := corev1.PodTemplateSpec{}
		if len(built.statefulSets) == 1 {
			tmpl = built.statefulSets[0].Spec.Template
		} else {
			tmpl = built.deployments[0].Spec.Template
		}
		checkAccessFile(t, source, tmpl, kustomizeAccessFile, "eventstore-access-file")
		if creds := built.serviceMonitors[0].Spec.Endpoints[0].Authorization.Credentials; creds.Name != "eventstore-access-file" || creds.Key != "scrape-token" {
			t.Errorf("%s: ServiceMonitor credentials %+v", source, creds)
		}
	}
	raw, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", "access-file", "secret.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	examples := decodeManifests(t, "access-file/secret.example.yaml", raw).secrets
	if len(examples) != 1 || examples[0].Name != "eventstore-access-file" {
		t.Fatalf("secret example %+v", examples)
	}
	// The example's access file, with its placeholders filled in, starts
	// eventstore.
	dir := t.TempDir()
	access := examples[0].StringData["access.yaml"]
	for i, placeholder := range regexp.MustCompile(`"<hex SHA-256 of [^>]*>"`).FindAllString(access, -1) {
		access = strings.Replace(access, placeholder, fmt.Sprintf("%064x", i+1), 1)
	}
	harness.WriteFile(t, dir, "scrape-token", "a-scrape-token-of-32-characters-or-more")
	file := harness.WriteFile(t, dir, "access.yaml", access)
	inst := harness.Start(t, bin, "run", "--access-file="+file, "--data-directory-temporary", "--http-enabled", "--https-enabled=false", "--http-port=0")
	if r := inst.Do("GET", "/api/v1/health", "a-scrape-token-of-32-characters-or-more", ""); r.StatusCode != 200 {
		t.Errorf("health with the example's scrape token: %d", r.StatusCode)
	}
}
