package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/eventstore-service/eventstore/e2e/harness"
)

// The dashboard and the alerting rules (docs/operations.md, "Alerts and
// runbooks"), and the copies the Helm chart ships, since helm reads no file
// outside the chart.
var (
	dashboardFile      = filepath.Join(deployDir, "grafana", "eventstore.json")
	rulesFile          = filepath.Join(deployDir, "prometheus", "eventstore.rules.yml")
	prometheusRuleFile = filepath.Join(deployDir, "prometheus", "eventstore-rules.yaml")
	rulesTestsDir      = filepath.Join(deployDir, "prometheus", "tests")
	chartDashboardFile = filepath.Join(helmChart, "files", "eventstore.json")
	chartRulesFile     = filepath.Join(helmChart, "files", "eventstore.rules.yml")
	operationsDoc      = filepath.Join("..", "docs", "operations.md")
)

// specAlerts are the alerts the rules must have, with the condition of
// docs/operations.md, "Alerts and runbooks", each covers.
var specAlerts = map[string]string{
	"EventstoreDown":                   "instance down",
	"EventstoreStorageNotWritable":     "storage not writable (fail-stop)",
	"EventstoreReadOnly":               "read-only longer than 10 min",
	"EventstoreDiskFillingUp":          "disk predicted full within 4 h",
	"EventstoreWriteLatencyHigh":       "write p99 above 250 ms for 10 min",
	"EventstoreServerErrors":           "5xx ratio above 1 % for 5 min",
	"EventstoreMemoryNearLimit":        "memory above 90 % of the limit",
	"EventstoreSubscriptionLagGrowing": "subscription lag growing for 15 min",
	"EventstorePostgresUnreachable":    "PostgreSQL unreachable",
}

// notFromTheBinary are the metrics the rules may name that eventstore does
// not export, with where they come from.
var notFromTheBinary = map[string]string{
	"up":                                   "Prometheus, for every target",
	"kubelet_volume_stats_available_bytes": "the kubelet, for every volume claim",
}

// readFile returns a file of the repository.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// checkCopy asserts that copy holds the bytes of original.
func checkCopy(t *testing.T, original, copy string) {
	t.Helper()
	if !bytes.Equal(readFile(t, original), readFile(t, copy)) {
		t.Errorf("%s differs from %s, whose copy it must be: cp %s %s", copy, original, original, copy)
	}
}

// ruleFile is a Prometheus rules file.
type ruleFile struct {
	Groups []monitoringv1.RuleGroup `json:"groups"`
}

// decodeRuleGroups decodes a rules file strictly.
func decodeRuleGroups(t *testing.T, source string, raw []byte) []monitoringv1.RuleGroup {
	t.Helper()
	var f ruleFile
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		t.Fatalf("%s: %v", source, err)
	}
	if len(f.Groups) == 0 {
		t.Fatalf("%s: no rule groups", source)
	}
	return f.Groups
}

// alertRules returns the alerting rules of groups by name.
func alertRules(t *testing.T, groups []monitoringv1.RuleGroup) map[string]monitoringv1.Rule {
	t.Helper()
	out := map[string]monitoringv1.Rule{}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a rule that is not an alert (record %q)", g.Name, r.Record)
				continue
			}
			if _, dup := out[r.Alert]; dup {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			out[r.Alert] = r
		}
	}
	return out
}

// runbookSections returns the headings of the subsections of "## Alerts
// and runbooks" in docs/operations.md, and the heading that follows it.
func runbookSections(t *testing.T) (sections []string, next string) {
	t.Helper()
	in := false
	for _, line := range strings.Split(string(readFile(t, operationsDoc)), "\n") {
		switch {
		case line == "## Alerts and runbooks":
			in = true
		case in && strings.HasPrefix(line, "## "):
			return sections, line
		case in && strings.HasPrefix(line, "### "):
			sections = append(sections, strings.TrimPrefix(line, "### "))
		}
	}
	if !in {
		t.Fatalf("%s has no section \"## Alerts and runbooks\"", operationsDoc)
	}
	return sections, ""
}

// unitTestCoverage reads promtool unit test files and returns, by alert,
// whether some evaluation expects it firing and some expects it silent.
func unitTestCoverage(t *testing.T, files []string) (firing, silent map[string]bool) {
	t.Helper()
	firing, silent = map[string]bool{}, map[string]bool{}
	for _, file := range files {
		var tests struct {
			Tests []struct {
				AlertRuleTest []struct {
					AlertName string            `json:"alertname"`
					ExpAlerts []json.RawMessage `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(readFile(t, file), &tests); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, test := range tests.Tests {
			for _, eval := range test.AlertRuleTest {
				if len(eval.ExpAlerts) > 0 {
					firing[eval.AlertName] = true
				} else {
					silent[eval.AlertName] = true
				}
			}
		}
	}
	return firing, silent
}

// TestAlertRules checks the alerting rules: promtool accepts them and
// passes their unit tests, which make every alert fire and stay silent;
// the PrometheusRule and the chart's copy hold the same groups; every alert
// of docs/operations.md is there, with a severity, a summary, a
// description and a runbook that is a section of docs/operations.md; their
// PromQL treats counters and histograms as such.
func TestAlertRules(t *testing.T) {
	promtool := tool(t, "promtool")
	command(t, promtool, "check", "rules", rulesFile)
	tests, err := filepath.Glob(filepath.Join(rulesTestsDir, "*.yml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no unit tests in %s: %v", rulesTestsDir, err)
	}
	command(t, promtool, append([]string{"test", "rules"}, tests...)...)

	groups := decodeRuleGroups(t, rulesFile, readFile(t, rulesFile))
	var rule monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict(readFile(t, prometheusRuleFile), &rule); err != nil {
		t.Fatalf("%s: %v", prometheusRuleFile, err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" || rule.Name != "eventstore" {
		t.Errorf("%s: %s %s %q, want the PrometheusRule eventstore", prometheusRuleFile, rule.APIVersion, rule.Kind, rule.Name)
	}
	if !reflect.DeepEqual(rule.Spec.Groups, groups) {
		t.Errorf("the groups of %s differ from those of %s", prometheusRuleFile, rulesFile)
	}
	checkCopy(t, rulesFile, chartRulesFile)

	alerts := alertRules(t, groups)
	sections, next := runbookSections(t)
	firing, silent := unitTestCoverage(t, tests)
	for name, condition := range specAlerts {
		if _, ok := alerts[name]; !ok {
			t.Errorf("no alert %s (%s)", name, condition)
		}
	}
	for name, r := range alerts {
		if _, ok := specAlerts[name]; !ok {
			t.Errorf("alert %s is not one of docs/operations.md: add it to specAlerts with its condition", name)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", name, s)
		}
		if keys := slices.Sorted(maps.Keys(r.Annotations)); !slices.Equal(keys, []string{"description", "runbook", "summary"}) {
			t.Errorf("%s: annotations %v, want description, runbook and summary", name, keys)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: empty summary or description", name)
		}
		if want := "docs/operations.md#" + strings.ToLower(name); r.Annotations["runbook"] != want {
			t.Errorf("%s: runbook %q, want %q", name, r.Annotations["runbook"], want)
		}
		if !slices.Contains(sections, name) {
			t.Errorf("%s: docs/operations.md has no runbook \"### %s\" under \"## Alerts and runbooks\"", name, name)
		}
		if !firing[name] || !silent[name] {
			t.Errorf("%s: the unit tests expect it firing %v, silent %v; want both", name, firing[name], silent[name])
		}
		checkPromQL(t, "alert "+name, r.Expr.String())
	}
	for _, s := range sections {
		if _, ok := alerts[s]; !ok {
			t.Errorf("docs/operations.md has a runbook for %s, which is no alert", s)
		}
	}
	if next != "## PostgreSQL mode" {
		t.Errorf("\"## Alerts and runbooks\" is followed by %q, want \"## PostgreSQL mode\"", next)
	}
}

// selectorUse is a metric selector of an expression and what encloses it.
type selectorUse struct {
	name      string
	matchers  []*labels.Matcher
	functions []string // the calls around it, innermost first
	by        []string // the labels of the aggregations around it
}

// selectorUses returns the metric selectors of expr.
func selectorUses(expr parser.Expr) []selectorUse {
	var uses []selectorUse
	parser.Inspect(expr, func(node parser.Node, path []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		u := selectorUse{name: vs.Name, matchers: vs.LabelMatchers}
		for i := len(path) - 1; i >= 0; i-- {
			switch n := path[i].(type) {
			case *parser.Call:
				u.functions = append(u.functions, n.Func.Name)
			case *parser.AggregateExpr:
				if !n.Without {
					u.by = append(u.by, n.Grouping...)
				}
			}
		}
		uses = append(uses, u)
		return nil
	})
	return uses
}

// isCounterSeries reports whether a series name is a counter's or a
// histogram's, which only make sense as a rate.
func isCounterSeries(name string) bool {
	for _, suffix := range []string{"_total", "_bucket", "_count", "_sum"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// promqlParser is Prometheus's PromQL parser with its default options.
var promqlParser = parser.NewParser(parser.Options{})

// rateFunctions turn a counter into a rate or an increase.
var rateFunctions = []string{"rate", "irate", "increase"}

// checkPromQL parses expr and checks that counters and histograms are read
// through rate() and nothing else is, and that every histogram_quantile
// takes rates of buckets, summed by le if summed at all. It returns the
// parsed expression, nil if it does not parse.
func checkPromQL(t *testing.T, where, expr string) parser.Expr {
	t.Helper()
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return nil
	}
	for _, u := range selectorUses(e) {
		inRate := len(u.functions) > 0 && slices.Contains(rateFunctions, u.functions[0])
		switch {
		case u.name == "":
			t.Errorf("%s: a selector without a metric name in %q", where, expr)
		case isCounterSeries(u.name) && !inRate:
			t.Errorf("%s: %s is a counter or histogram series read without rate() in %q", where, u.name, expr)
		case !isCounterSeries(u.name) && inRate:
			t.Errorf("%s: %s() of %s, which is no counter, in %q", where, u.functions[0], u.name, expr)
		}
	}
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		call, ok := node.(*parser.Call)
		if !ok || call.Func.Name != "histogram_quantile" {
			return nil
		}
		arg := unparen(call.Args[1])
		if agg, ok := arg.(*parser.AggregateExpr); ok {
			if agg.Op != parser.SUM || agg.Without || !slices.Contains(agg.Grouping, "le") {
				t.Errorf("%s: histogram_quantile over %s, want sum by (le, …) in %q", where, agg, expr)
			}
			arg = unparen(agg.Expr)
		}
		rate, ok := arg.(*parser.Call)
		if !ok || rate.Func.Name != "rate" {
			t.Errorf("%s: histogram_quantile takes %s, want a rate of buckets, in %q", where, arg, expr)
			return nil
		}
		if m, ok := rate.Args[0].(*parser.MatrixSelector); !ok || !strings.HasSuffix(m.VectorSelector.(*parser.VectorSelector).Name, "_bucket") {
			t.Errorf("%s: histogram_quantile over the rate of %s, which is no bucket series, in %q", where, rate.Args[0], expr)
		}
		return nil
	})
	return e
}

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// grafanaDashboard is what the tests read of a dashboard beyond its schema.
type grafanaDashboard struct {
	UID           string         `json:"uid"`
	Title         string         `json:"title"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	GridPos    struct {
		X int `json:"x"`
		Y int `json:"y"`
		W int `json:"w"`
		H int `json:"h"`
	} `json:"gridPos"`
	Collapsed bool           `json:"collapsed"`
	Panels    []grafanaPanel `json:"panels"`
	Targets   []struct {
		Datasource *grafanaDatasource `json:"datasource"`
		Expr       string             `json:"expr"`
		RefID      string             `json:"refId"`
	} `json:"targets"`
}

type grafanaVariable struct {
	Name       string             `json:"name"`
	Type       string             `json:"type"`
	Query      json.RawMessage    `json:"query"`
	Datasource *grafanaDatasource `json:"datasource"`
}

// promDatasource is how every query of the dashboard names its data
// source: the dashboard's variable datasource.
var promDatasource = grafanaDatasource{Type: "prometheus", UID: "${datasource}"}

// readDashboard decodes the dashboard for the tests' own checks.
func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	var d grafanaDashboard
	if err := json.Unmarshal(readFile(t, dashboardFile), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// allPanels returns the panels of d, those of collapsed rows included.
func allPanels(d grafanaDashboard) []grafanaPanel {
	var out []grafanaPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// dashboardQuery is a PromQL expression of the dashboard and where it is.
type dashboardQuery struct {
	where string
	expr  string
}

// labelValues is the form of the dashboard's variable queries.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

// dashboardQueries returns every PromQL expression of d: the panels'
// targets, and the selectors of the variables' label_values queries.
func dashboardQueries(t *testing.T, d grafanaDashboard) []dashboardQuery {
	t.Helper()
	var out []dashboardQuery
	for _, p := range allPanels(d) {
		for _, target := range p.Targets {
			out = append(out, dashboardQuery{fmt.Sprintf("panel %q target %s", p.Title, target.RefID), target.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var query string
		if json.Unmarshal(v.Query, &query) != nil {
			var object struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &object); err != nil {
				t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
			}
			query = object.Query
		}
		m := labelValues.FindStringSubmatch(query)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(<selector>, <label>)", v.Name, query)
		}
		out = append(out, dashboardQuery{"variable " + v.Name, m[1]})
	}
	return out
}

// grafanaVariables are the values the tests give the variables of the
// dashboard's expressions: Grafana's own, and the dashboard's.
var grafanaVariables = map[string]string{
	"__rate_interval": "2m",
	"__interval":      "30s",
	"__range":         "6h",
	"job":             "eventstore",
	"instance":        "10.0.0.1:3000",
}

var grafanaVariableRef = regexp.MustCompile(`\$(?:\{(\w+)\}|(\w+))`)

// substitute puts the values of grafanaVariables into expr; an unknown
// variable fails the test.
func substitute(t *testing.T, q dashboardQuery) string {
	t.Helper()
	return grafanaVariableRef.ReplaceAllStringFunc(q.expr, func(ref string) string {
		m := grafanaVariableRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		v, ok := grafanaVariables[name]
		if !ok {
			t.Errorf("%s: unknown variable $%s in %q", q.where, name, q.expr)
		}
		return v
	})
}

// TestDashboardSchema validates the dashboard against Grafana's dashboard
// schema as Grafana's Foundation SDK publishes it (no Grafana server can be
// had from the registries the project reaches): a strict decoding, which
// fails on unknown fields, wrong types and missing required fields, of the
// dashboard, its panels' options and field configs and its Prometheus
// queries, and the schema's constraints. Beyond the schema: a stable uid,
// the job and instance variables, every query on the data source variable,
// panels that fit the grid without overlapping, and the chart's copy.
func TestDashboardSchema(t *testing.T) {
	raw := readFile(t, dashboardFile)
	checkCopy(t, dashboardFile, chartDashboardFile)
	// kubectl apply keeps the whole ConfigMap in an annotation, which may
	// hold 256 KiB.
	if len(raw) > 200<<10 {
		t.Errorf("the dashboard has %d bytes; keep it well below 256 KiB so that kubectl apply can take its ConfigMap", len(raw))
	}

	plugins.RegisterDefaultPlugins()
	// The dashboard is in the classic JSON model, which Grafana imports and
	// its sidecar provisions; the SDK's v2 is the other, resource-shaped one.
	//lint:ignore SA1019 the classic model is the one this dashboard is in
	var model dashboard.Dashboard
	if err := sdkError(model.UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("the dashboard does not decode strictly into Grafana's schema:\n%v", err)
	}
	if err := sdkError(model.Validate()); err != nil {
		t.Fatalf("the dashboard breaks constraints of Grafana's schema:\n%v", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if id, ok := top["id"]; ok && string(id) != "null" {
		t.Errorf("the dashboard has the id %s of some Grafana instance; importing and provisioning want none", id)
	}

	d := readDashboard(t)
	if d.UID != "eventstore" || d.Title == "" {
		t.Errorf("uid %q, title %q: want the uid eventstore and a title", d.UID, d.Title)
	}
	variables := map[string]grafanaVariable{}
	for _, v := range d.Templating.List {
		variables[v.Name] = v
	}
	if v := variables["datasource"]; v.Type != "datasource" || string(v.Query) != `"prometheus"` {
		t.Errorf("variable datasource %+v, want a Prometheus data source variable", v)
	}
	for _, name := range []string{"job", "instance"} {
		if v := variables[name]; v.Type != "query" || v.Datasource == nil || *v.Datasource != promDatasource {
			t.Errorf("variable %s %+v, want a query of the data source variable", name, v)
		}
	}

	ids, titles := map[int]string{}, map[string]bool{}
	for _, p := range allPanels(d) {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q have the id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Title == "" || titles[p.Title] {
			t.Errorf("panel %d: title %q, want one of its own", p.ID, p.Title)
		}
		titles[p.Title] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v does not fit the 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			if len(p.Targets) > 0 || (!p.Collapsed && len(p.Panels) > 0) {
				t.Errorf("row %q: queries, or panels inside an expanded row", p.Title)
			}
			continue
		}
		if p.Datasource == nil || *p.Datasource != promDatasource || len(p.Targets) == 0 {
			t.Errorf("panel %q: data source %+v and %d queries, want queries of the data source variable", p.Title, p.Datasource, len(p.Targets))
		}
		refs := map[string]bool{}
		for _, target := range p.Targets {
			if target.Datasource == nil || *target.Datasource != promDatasource || target.Expr == "" || target.RefID == "" || refs[target.RefID] {
				t.Errorf("panel %q: query %+v, want an expression with a refId of its own on the data source variable", p.Title, target)
			}
			refs[target.RefID] = true
		}
	}
	checkGrid(t, "the dashboard", d.Panels)
	for _, row := range d.Panels {
		if row.Collapsed {
			checkGrid(t, "row "+row.Title, row.Panels)
		}
	}
}

// sdkError returns err, or nil for the empty list of errors that the
// Foundation SDK's generated code returns when it found none.
func sdkError(err error) error {
	var errs cog.BuildErrors
	if errors.As(err, &errs) && len(errs) == 0 {
		return nil
	}
	return err
}

// checkGrid asserts that no two panels overlap.
func checkGrid(t *testing.T, where string, panels []grafanaPanel) {
	t.Helper()
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range panels {
		for x := p.GridPos.X; x < p.GridPos.X+p.GridPos.W; x++ {
			for y := p.GridPos.Y; y < p.GridPos.Y+p.GridPos.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Errorf("%s: panels %q and %q overlap at column %d, row %d", where, other, p.Title, x, y)
					return
				}
				taken[cell{x, y}] = p.Title
			}
		}
	}
}

// TestDashboardQueries parses every PromQL expression of the dashboard,
// with Prometheus's parser and with Debian's promtool (as recording rules),
// checks that counters and histograms are read as rates and quantiles over
// buckets by le, that every query keeps to the variables job and instance,
// and that the figures docs/operations.md names are shown.
func TestDashboardQueries(t *testing.T) {
	queries := dashboardQueries(t, readDashboard(t))
	var uses []selectorUse
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range queries {
		expr := substitute(t, q)
		if e := checkPromQL(t, q.where, expr); e != nil {
			for _, u := range selectorUses(e) {
				// Every query keeps to the job and instances chosen; the
				// variables' own queries choose among them.
				job := slices.ContainsFunc(u.matchers, func(m *labels.Matcher) bool { return m.String() == `job=~"eventstore"` })
				instance := slices.ContainsFunc(u.matchers, func(m *labels.Matcher) bool { return m.String() == `instance=~"10.0.0.1:3000"` })
				if (q.where != "variable job" && !job) || (!strings.HasPrefix(q.where, "variable") && !instance) {
					t.Errorf("%s: %s in %q does not keep to the variables job and instance", q.where, u.name, q.expr)
				}
				uses = append(uses, u)
			}
		}
		quoted, err := json.Marshal(expr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&rules, "      - record: dashboard:query_%d\n        expr: %s\n", i, quoted)
	}
	file := harness.WriteFile(t, t.TempDir(), "dashboard.rules.yml", rules.String())
	command(t, tool(t, "promtool"), "check", "rules", file)

	shows := func(metric, function, by, matcher string) bool {
		return slices.ContainsFunc(uses, func(u selectorUse) bool {
			return u.name == metric &&
				(function == "" || slices.Contains(u.functions, function)) &&
				(by == "" || slices.Contains(u.by, by)) &&
				(matcher == "" || slices.ContainsFunc(u.matchers, func(m *labels.Matcher) bool { return m.String() == matcher }))
		})
	}
	for _, figure := range []struct {
		what                          string
		metric, function, by, matcher string
	}{
		{"events written per second", "eventstore_events_written_total", "rate", "", ""},
		{"events read per second", "eventstore_events_read_total", "rate", "", ""},
		{"write latency percentiles", "eventstore_write_duration_seconds_bucket", "histogram_quantile", "le", ""},
		{"commit sync latency", "eventstore_storage_sync_duration_seconds_bucket", "histogram_quantile", "le", ""},
		{"request rate by route", "eventstore_http_requests_total", "rate", "route", ""},
		{"errors by route", "eventstore_http_requests_total", "rate", "route", `code=~"5.."`},
		{"observers", "eventstore_observers", "", "", ""},
		{"streams", "eventstore_streams", "", "", ""},
		{"storage size", "eventstore_storage_size_bytes", "", "", ""},
		{"storage growth", "eventstore_storage_size_bytes", "deriv", "", ""},
		{"memory", "process_resident_memory_bytes", "", "", ""},
		{"the memory limit", "go_gc_gomemlimit_bytes", "", "", ""},
		{"subscription lag per subscription", "eventstore_subscription_lag_events", "", "subscription", ""},
		{"PostgreSQL pool in use", "eventstore_postgres_connections_in_use", "", "", ""},
		{"PostgreSQL pool idle", "eventstore_postgres_connections_idle", "", "", ""},
		{"PostgreSQL pool size", "eventstore_postgres_connections_max", "", "", ""},
	} {
		if !shows(figure.metric, figure.function, figure.by, figure.matcher) {
			t.Errorf("the dashboard does not show %s: no query of %s (function %q, by %q, matcher %q)", figure.what, figure.metric, figure.function, figure.by, figure.matcher)
		}
	}
}

// exportedMetrics adds the names of the series that target's nodes export
// now to into.
func exportedMetrics(t *testing.T, target harness.Target, into map[string]bool) {
	t.Helper()
	for _, node := range target.Nodes() {
		r := node.Do("GET", "/api/v1/health?format=openmetrics", harness.Token, "")
		if r.StatusCode != 200 {
			t.Fatalf("metrics: %d %s", r.StatusCode, r.Body)
		}
		for series := range parseOpenMetrics(t, r.Body, r.Header.Get("Content-Type")) {
			name, _, _ := strings.Cut(series, "{")
			into[name] = true
		}
	}
}

// exercise uses what makes labelled series appear: writes, reads, an
// observer that receives a live event, an EventQL query, a request with a
// wrong token, and a subscription with a consumer that acknowledges.
func exercise(t *testing.T, inst harness.Target) {
	t.Helper()
	mustWrite(t, inst, candidates("/orders/1", "io.example.placed", "/orders/2", "io.example.placed"))
	stream(t, inst, "/api/v1/read-events", `{"subject":"/orders","options":{"recursive":true}}`)
	o := observe(t, inst, `{"subject":"/orders","options":{"recursive":true}}`)
	o.events(t, 2, 10*time.Second)
	mustWrite(t, inst, candidates("/orders/3", "io.example.placed"))
	o.events(t, 1, 10*time.Second)
	stream(t, inst, "/api/v1/run-eventql-query", `{"query":"FROM e IN events PROJECT INTO e"}`)
	if r := inst.Do("GET", "/api/v1/health", "not-the-token", ""); r.StatusCode != 401 {
		t.Fatalf("a wrong token: %d", r.StatusCode)
	}
	if r := inst.Do("POST", "/api/v1/create-subscription", harness.Token, `{"subscription":"billing","subject":"/orders","options":{"recursive":true}}`); r.StatusCode != 200 {
		t.Fatalf("create-subscription: %d %s", r.StatusCode, r.Body)
	}
	c := consume(t, inst, "billing", "w1")
	ds := c.deliveries(t, 3)
	if r := inst.Do("POST", "/api/v1/acknowledge-deliveries", harness.Token, `{"subscription":"billing","deliveries":`+tokensOf(ds)+`}`); r.StatusCode != 200 {
		t.Fatalf("acknowledge-deliveries: %d %s", r.StatusCode, r.Body)
	}
}

// TestDashboardAndRulesNameExportedMetrics scrapes the binary in both
// modes after using what the dashboard shows (a Pebble node with a memory
// limit, for the memory of queries, and a node of PostgreSQL mode, for the
// pool) and checks that every metric the dashboard's queries name is one
// they export, and so is every eventstore, Go and process metric of the
// rules; the rules' other metrics are the few that come from elsewhere.
func TestDashboardAndRulesNameExportedMetrics(t *testing.T) {
	exported := map[string]bool{}
	pebble := harness.Start(t, bin, harness.Dev("--memory-limit=1GiB")...)
	exercise(t, pebble)
	exportedMetrics(t, pebble, exported)
	postgres := startPostgres(t, 1)
	mustWrite(t, postgres, candidates("/orders/1", "io.example.placed"))
	exportedMetrics(t, postgres, exported)

	missing := map[string][]string{}
	for _, q := range dashboardQueries(t, readDashboard(t)) {
		e, err := promqlParser.ParseExpr(substitute(t, q))
		if err != nil {
			t.Fatalf("%s: %v (TestDashboardQueries tells more)", q.where, err)
		}
		for _, u := range selectorUses(e) {
			if !exported[u.name] {
				missing[u.name] = append(missing[u.name], q.where)
			}
		}
	}
	for _, r := range alertRules(t, decodeRuleGroups(t, rulesFile, readFile(t, rulesFile))) {
		e, err := promqlParser.ParseExpr(r.Expr.String())
		if err != nil {
			t.Fatalf("alert %s: %v", r.Alert, err)
		}
		for _, u := range selectorUses(e) {
			if _, elsewhere := notFromTheBinary[u.name]; elsewhere {
				continue
			}
			if !exported[u.name] {
				missing[u.name] = append(missing[u.name], "alert "+r.Alert)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(missing)) {
		t.Errorf("%s is not exported by the binary in either mode (after the exercise), but named by %s", name, strings.Join(missing[name], ", "))
	}
	if t.Failed() {
		t.Logf("exported: %s", strings.Join(slices.Sorted(maps.Keys(exported)), " "))
	}
}

// monitoringObjects decodes rendered manifests (decodeManifests) and
// returns them with their ConfigMaps and PrometheusRules.
func monitoringObjects(t *testing.T, source string, raw []byte) (objects, []corev1.ConfigMap, []monitoringv1.PrometheusRule) {
	t.Helper()
	o := decodeManifests(t, source, raw)
	return o, o.configMaps, o.prometheusRules
}

// checkMonitoring asserts that configMaps hold the dashboard ConfigMap alone,
// labelled for Grafana's sidecar and byte for byte the dashboard, and rules
// the PrometheusRule alone, with the groups of the rules file for a job
// and volume claims named name, whose job is the name of the Service the
// ServiceMonitor scrapes and whose volume claims are the StatefulSet's. It
// returns the two.
func checkMonitoring(t *testing.T, source, name string, o objects, configMaps []corev1.ConfigMap, rules []monitoringv1.PrometheusRule) (corev1.ConfigMap, monitoringv1.PrometheusRule) {
	t.Helper()
	if len(configMaps) != 1 || len(rules) != 1 {
		t.Fatalf("%s: %d ConfigMaps and %d PrometheusRules, want one of each", source, len(configMaps), len(rules))
	}
	cm, rule := configMaps[0], rules[0]
	if cm.Labels["grafana_dashboard"] != "1" || len(cm.Data) != 1 || cm.Data["eventstore.json"] != string(readFile(t, dashboardFile)) {
		t.Errorf("%s: ConfigMap %s with labels %v and keys %v: want the label grafana_dashboard: \"1\" and eventstore.json holding %s byte for byte",
			source, cm.Name, cm.Labels, slices.Sorted(maps.Keys(cm.Data)), dashboardFile)
	}
	plain := strings.NewReplacer(`job="eventstore"`, fmt.Sprintf(`job=%q`, name),
		`=~"data-eventstore-`, `=~"data-`+name+`-`).Replace(string(readFile(t, rulesFile)))
	if !reflect.DeepEqual(rule.Spec.Groups, decodeRuleGroups(t, rulesFile, []byte(plain))) {
		t.Errorf("%s: the PrometheusRule's groups are not those of %s for the name %s", source, rulesFile, name)
	}
	rendered, err := yaml.Marshal(ruleFile{Groups: rule.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	command(t, tool(t, "promtool"), "check", "rules", harness.WriteFile(t, t.TempDir(), "rendered.rules.yml", string(rendered)))

	alerts := alertRules(t, rule.Spec.Groups)
	matcher := func(alert, metric, label string) *labels.Matcher {
		r := alerts[alert]
		e, err := promqlParser.ParseExpr(r.Expr.String())
		if err != nil {
			t.Fatalf("%s: alert %s: %v", source, alert, err)
		}
		for _, u := range selectorUses(e) {
			for _, m := range u.matchers {
				if u.name == metric && m.Name == label {
					return m
				}
			}
		}
		t.Fatalf("%s: alert %s selects no %s by %s", source, alert, metric, label)
		return nil
	}
	var scraped []string
	for _, svc := range o.services {
		if len(o.serviceMonitors) == 1 && selects(o.serviceMonitors[0].Spec.Selector.MatchLabels, svc.Labels) {
			scraped = append(scraped, svc.Name)
		}
	}
	if job := matcher("EventstoreDown", "up", "job"); len(scraped) != 1 || !job.Matches(scraped[0]) {
		t.Errorf("%s: EventstoreDown selects %s, the ServiceMonitor scrapes the Services %v (whose name is the job)", source, job, scraped)
	}
	for _, sts := range o.statefulSets {
		claim := fmt.Sprintf("%s-%s-0", sts.Spec.VolumeClaimTemplates[0].Name, sts.Name)
		if m := matcher("EventstoreDiskFillingUp", "kubelet_volume_stats_available_bytes", "persistentvolumeclaim"); !m.Matches(claim) || m.Matches("data-other-0") {
			t.Errorf("%s: EventstoreDiskFillingUp selects %s, the StatefulSet's claim is %s", source, m, claim)
		}
	}
	return cm, rule
}

// TestHelmChartMonitoring renders the chart with the dashboard and the
// rules on, in both modes, under a release name that is not the chart's:
// the dashboard's ConfigMap for Grafana's sidecar and the PrometheusRule
// for this release's job and claims, with the values' labels, annotations
// and namespace; off by default.
func TestHelmChartMonitoring(t *testing.T) {
	helm := tool(t, "helm")
	on := "serviceMonitor.enabled=true,grafana.dashboard.enabled=true,prometheusRule.enabled=true"
	command(t, helm, "lint", "--strict", helmChart, "--set", on)
	for _, backend := range []string{"pebble", "postgres"} {
		source := "helm template (" + backend + ")"
		_, configMaps, rules := monitoringObjects(t, source, command(t, helm, "template", "shop", helmChart, "--set", "storage.backend="+backend))
		if len(configMaps) != 0 || len(rules) != 0 {
			t.Errorf("%s: the defaults render %d ConfigMaps and %d PrometheusRules, want none", source, len(configMaps), len(rules))
		}

		source = "helm template (" + backend + ", dashboard and rules)"
		raw := command(t, helm, "template", "shop", helmChart, "--namespace", "shop", "--set", on+",storage.backend="+backend+
			",prometheusRule.labels.release=monitoring,grafana.dashboard.namespace=grafana,grafana.dashboard.annotations.grafana_folder=eventstore"+
			",extraEnv[0].name=OTEL_EXPORTER_OTLP_ENDPOINT,extraEnv[0].value=http://otel-collector:4318")
		o, configMaps, rules := monitoringObjects(t, source, raw)
		var containers []corev1.Container
		for _, s := range o.statefulSets {
			containers = append(containers, s.Spec.Template.Spec.Containers...)
		}
		for _, d := range o.deployments {
			containers = append(containers, d.Spec.Template.Spec.Containers...)
		}
		if len(containers) != 1 || len(containers[0].Env) != 1 || containers[0].Env[0] != (corev1.EnvVar{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector:4318"}) {
			t.Errorf("%s: the container's environment is not extraEnv (tracing): %v", source, containers)
		}
		if backend == "pebble" {
			checkObjects(t, source, o, true)
		} else {
			checkPostgresObjects(t, source, o, true)
		}
		cm, rule := checkMonitoring(t, source, "shop-eventstore", o, configMaps, rules)
		if cm.Namespace != "grafana" || cm.Annotations["grafana_folder"] != "eventstore" {
			t.Errorf("%s: ConfigMap in namespace %q with annotations %v, want the values' namespace grafana and folder eventstore", source, cm.Namespace, cm.Annotations)
		}
		if rule.Labels["release"] != "monitoring" || rule.Labels["app.kubernetes.io/instance"] != "shop" {
			t.Errorf("%s: PrometheusRule labels %v, want the chart's and release: monitoring", source, rule.Labels)
		}
	}
}

// TestKubernetesMonitoring builds an overlay of each setup with the
// monitoring component: the dashboard's ConfigMap and the PrometheusRule
// join the setup, whose own objects stay as they are; the bases have
// neither.
func TestKubernetesMonitoring(t *testing.T) {
	kustomize := tool(t, "kustomize")
	for _, base := range []string{"kubernetes", "kubernetes/postgres"} {
		_, configMaps, rules := monitoringObjects(t, "kustomize build "+base, command(t, kustomize, "build", filepath.Join(deployDir, base)))
		if len(configMaps) != 0 || len(rules) != 0 {
			t.Errorf("kustomize build %s: %d ConfigMaps and %d PrometheusRules without the component", base, len(configMaps), len(rules))
		}

		source := "kustomize build (" + base + " + monitoring)"
		o, configMaps, rules := monitoringObjects(t, source, command(t, kustomize, "build", overlay(t, "shop", base, "kubernetes/monitoring")))
		if base == "kubernetes" {
			checkObjects(t, source, o, true)
		} else {
			checkPostgresObjects(t, source, o, true)
		}
		cm, rule := checkMonitoring(t, source, "eventstore", o, configMaps, rules)
		if cm.Name != "eventstore-dashboard" || cm.Namespace != "shop" || rule.Name != "eventstore" || rule.Namespace != "shop" {
			t.Errorf("%s: ConfigMap %s/%s and PrometheusRule %s/%s, want eventstore-dashboard and eventstore in the overlay's namespace", source, cm.Namespace, cm.Name, rule.Namespace, rule.Name)
		}
	}
}
