// Command helm-render renders a Helm chart the way `helm template` does, for tests on machines where
// no helm binary can be installed. It uses Go's text/template and the sprig functions (the same
// engine Helm uses), validates the merged values against the chart's values.schema.json with
// gojsonschema (the validator Helm uses), and reports errors naming the template and line.
//
// Build offline with Debian's Go packages (golang-go, golang-github-masterminds-sprig-dev,
// golang-github-xeipuuv-gojsonschema-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o helm-render ./tools/helm-render
//
// Usage:
//
//	helm-render [--name N] [--namespace NS] [-f values.yaml]... [--set a.b=c]... [--set-string a=b]...
//	            [--is-upgrade] [--kube-version v1.29.0] [--api-versions group/version]... [--notes] CHART_DIR
//
// Output: every rendered template that is not empty, as `---\n# Source: <chart>/templates/<file>`
// documents (like helm template); with --notes only the rendered NOTES.txt. Errors go to stderr
// prefixed "Error: " and the exit status is 1 (2 for usage errors).
//
// Differences from Helm (documented, deliberate): `lookup` always returns an empty map (as with
// `helm template`), no subcharts/dependencies, no hooks ordering, `.Files` offers Get/GetBytes/Glob
// names only, documents are emitted in template file order rather than Helm's kind order.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"github.com/xeipuuv/gojsonschema"
	yaml2 "gopkg.in/yaml.v2"
	"gopkg.in/yaml.v3"
)

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

type options struct {
	name, namespace, kubeVersion string
	valueFiles, sets, setStrings []string
	apiVersions                  []string
	isUpgrade, notes             bool
	chart                        string
}

func parseArgs(args []string) (options, error) {
	o := options{name: "release-name", namespace: "default", kubeVersion: "v1.29.0"}
	next := func(i *int, flag string) (string, error) {
		if *i+1 >= len(args) {
			return "", usageError{fmt.Sprintf("flag %s needs a value", flag)}
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var err error
		var v string
		switch a {
		case "--name":
			o.name, err = next(&i, a)
		case "--namespace", "-n":
			o.namespace, err = next(&i, a)
		case "-f", "--values":
			v, err = next(&i, a)
			o.valueFiles = append(o.valueFiles, v)
		case "--set":
			v, err = next(&i, a)
			o.sets = append(o.sets, v)
		case "--set-string":
			v, err = next(&i, a)
			o.setStrings = append(o.setStrings, v)
		case "--kube-version":
			o.kubeVersion, err = next(&i, a)
		case "--api-versions":
			v, err = next(&i, a)
			o.apiVersions = append(o.apiVersions, v)
		case "--is-upgrade":
			o.isUpgrade = true
		case "--notes":
			o.notes = true
		default:
			if strings.HasPrefix(a, "-") {
				return o, usageError{fmt.Sprintf("unknown flag %s", a)}
			}
			if o.chart != "" {
				return o, usageError{"only one chart directory may be given"}
			}
			o.chart = a
		}
		if err != nil {
			return o, err
		}
	}
	if o.chart == "" {
		return o, usageError{"missing chart directory"}
	}
	return o, nil
}

func main() {
	o, err := parseArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %s\nusage: helm-render [--name N] [--namespace NS] [-f file]... [--set k=v]... [--notes] CHART_DIR\n", err)
		os.Exit(2)
	}
	out, err := run(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %s\n", err)
		os.Exit(1)
	}
	fmt.Print(out)
}

// ---- values ----

func readYAMLMap(file string) (map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %s", file, err)
	}
	if m == nil {
		m = map[string]interface{}{}
	}
	return m, nil
}

// mergeValues deep-merges src into dst (src wins); a null in src deletes the key, as in Helm.
func mergeValues(dst, src map[string]interface{}) map[string]interface{} {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if sok && dok {
			dst[k] = mergeValues(dm, sm)
		} else {
			dst[k] = v
		}
	}
	return dst
}

// splitUnescaped splits s on sep, ignoring separators escaped with a backslash or inside {...}.
func splitUnescaped(s string, sep byte) []string {
	var parts []string
	var cur strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
			continue
		}
		if c == '{' {
			depth++
		} else if c == '}' && depth > 0 {
			depth--
		}
		if c == sep && depth == 0 {
			parts = append(parts, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	return append(parts, cur.String())
}

func unescape(s string) string {
	return strings.NewReplacer(`\,`, ",", `\.`, ".", `\=`, "=", `\\`, `\`).Replace(s)
}

var intRe = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)
var indexRe = regexp.MustCompile(`^(.*)\[([0-9]+)\]$`)

func typedValue(raw string, asString bool) interface{} {
	if asString {
		return unescape(raw)
	}
	if strings.HasPrefix(raw, "{") && strings.HasSuffix(raw, "}") {
		var list []interface{}
		inner := raw[1 : len(raw)-1]
		if inner != "" {
			for _, p := range splitUnescaped(inner, ',') {
				list = append(list, typedValue(p, false))
			}
		}
		if list == nil {
			list = []interface{}{}
		}
		return list
	}
	switch raw {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if intRe.MatchString(raw) {
		if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
			return n
		}
	}
	return unescape(raw)
}

// applySet applies one --set expression ("a.b=1,c[0].d=x") to values.
func applySet(values map[string]interface{}, expr string, asString bool) error {
	for _, assignment := range splitUnescaped(expr, ',') {
		kv := splitUnescaped(assignment, '=')
		if len(kv) < 2 {
			return fmt.Errorf("failed parsing --set data: key %q has no value", assignment)
		}
		key, raw := kv[0], strings.Join(kv[1:], "=")
		if key == "" {
			return fmt.Errorf("failed parsing --set data: empty key in %q", assignment)
		}
		segs := splitUnescaped(key, '.')
		val := typedValue(raw, asString)
		if err := setPath(values, segs, val, key); err != nil {
			return err
		}
	}
	return nil
}

type segment struct {
	key   string
	index int // -1 when the segment is not indexed
}

func parseSegment(s string) segment {
	if m := indexRe.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[2])
		return segment{unescape(m[1]), n}
	}
	return segment{unescape(s), -1}
}

func setPath(m map[string]interface{}, segs []string, val interface{}, full string) error {
	seg := parseSegment(segs[0])
	last := len(segs) == 1
	if seg.index < 0 {
		if last {
			if val == nil {
				delete(m, seg.key)
			} else {
				m[seg.key] = val
			}
			return nil
		}
		child, ok := m[seg.key].(map[string]interface{})
		if !ok {
			child = map[string]interface{}{}
			m[seg.key] = child
		}
		return setPath(child, segs[1:], val, full)
	}
	if seg.index > 10000 {
		return fmt.Errorf("failed parsing --set data: index %d in %q is too large", seg.index, full)
	}
	list, _ := m[seg.key].([]interface{})
	for len(list) <= seg.index {
		list = append(list, nil)
	}
	if last {
		list[seg.index] = val
	} else {
		child, ok := list[seg.index].(map[string]interface{})
		if !ok {
			child = map[string]interface{}{}
			list[seg.index] = child
		}
		if err := setPath(child, segs[1:], val, full); err != nil {
			return err
		}
	}
	m[seg.key] = list
	return nil
}

// ---- schema ----

func validateSchema(chartName, chartDir string, values map[string]interface{}) error {
	schemaFile := filepath.Join(chartDir, "values.schema.json")
	schema, err := os.ReadFile(schemaFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	doc, err := json.Marshal(values)
	if err != nil {
		return err
	}
	res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return fmt.Errorf("%s: %s", schemaFile, err)
	}
	if res.Valid() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n", chartName)
	msgs := []string{}
	for _, e := range res.Errors() {
		msgs = append(msgs, fmt.Sprintf("- %s", e))
	}
	sort.Strings(msgs)
	b.WriteString(strings.Join(msgs, "\n"))
	return errors.New(b.String())
}

// ---- template engine ----

// APIVersions answers .Capabilities.APIVersions.Has.
type APIVersions []string

// Has reports whether a group/version or group/version/Kind is available.
func (a APIVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

// Files gives templates read access to non-template chart files.
type Files map[string][]byte

// Get returns a file's content as a string ("" when absent).
func (f Files) Get(name string) string { return string(f[name]) }

// GetBytes returns a file's content.
func (f Files) GetBytes(name string) []byte { return f[name] }

// Glob returns the files whose path matches pattern.
func (f Files) Glob(pattern string) Files {
	out := Files{}
	for k, v := range f {
		if ok, _ := path.Match(pattern, k); ok {
			out[k] = v
		}
	}
	return out
}

func toYAML(v interface{}) string {
	data, err := yaml2.Marshal(normalize(v))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

// normalize turns the result of yaml/json decoding into plain maps and lists for the encoders.
func normalize(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[k] = normalize(x)
		}
		return out
	case map[interface{}]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = normalize(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = normalize(x)
		}
		return out
	}
	return v
}

func fromYAML(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(normalize(v))
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

type chartFile struct {
	name    string // <chart>/templates/<rel>
	content string
}

func run(o options) (string, error) {
	chartDir := o.chart
	chartMeta, err := readYAMLMap(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return "", fmt.Errorf("%s is not a chart: %s", chartDir, err)
	}
	chartName, _ := chartMeta["name"].(string)
	if chartName == "" {
		return "", fmt.Errorf("%s/Chart.yaml: name is required", chartDir)
	}
	chart := map[string]interface{}{}
	for k, v := range chartMeta {
		chart[strings.ToUpper(k[:1])+k[1:]] = v
	}
	chart["APIVersion"] = chartMeta["apiVersion"]

	values := map[string]interface{}{}
	if _, err := os.Stat(filepath.Join(chartDir, "values.yaml")); err == nil {
		if values, err = readYAMLMap(filepath.Join(chartDir, "values.yaml")); err != nil {
			return "", err
		}
	}
	for _, f := range o.valueFiles {
		m, err := readYAMLMap(f)
		if err != nil {
			return "", err
		}
		values = mergeValues(values, m)
	}
	for _, s := range o.sets {
		if err := applySet(values, s, false); err != nil {
			return "", err
		}
	}
	for _, s := range o.setStrings {
		if err := applySet(values, s, true); err != nil {
			return "", err
		}
	}
	if err := validateSchema(chartName, chartDir, values); err != nil {
		return "", err
	}

	// Collect templates and other files.
	var templates []chartFile
	files := Files{}
	err = filepath.WalkDir(chartDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(chartDir, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "templates/") {
			templates = append(templates, chartFile{chartName + "/" + rel, string(data)})
		} else {
			files[rel] = data
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Slice(templates, func(i, j int) bool { return templates[i].name < templates[j].name })

	kubeVersion := strings.TrimPrefix(o.kubeVersion, "v")
	parts := strings.SplitN(kubeVersion, ".", 3)
	for len(parts) < 2 {
		parts = append(parts, "0")
	}
	apiVersions := APIVersions{"v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1", "policy/v1", "networking.k8s.io/v1", "autoscaling/v2"}
	apiVersions = append(apiVersions, o.apiVersions...)
	top := map[string]interface{}{
		"Values": values,
		"Chart":  chart,
		"Release": map[string]interface{}{
			"Name": o.name, "Namespace": o.namespace, "Service": "Helm",
			"IsInstall": !o.isUpgrade, "IsUpgrade": o.isUpgrade, "Revision": map[bool]int{true: 2, false: 1}[o.isUpgrade],
		},
		"Capabilities": map[string]interface{}{
			"KubeVersion": map[string]interface{}{"Version": "v" + kubeVersion, "GitVersion": "v" + kubeVersion, "Major": parts[0], "Minor": parts[1]},
			"APIVersions": apiVersions,
		},
		"Files": files,
	}

	root := template.New("gotpl").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	includedNames := map[string]int{}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		if includedNames[name] > 1000 {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		includedNames[name]++
		defer func() { includedNames[name]-- }()
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", fmt.Errorf("cannot parse template %q: %s", text, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, data); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %s", text, err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return v, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return v, errors.New(msg)
		}
		return v, nil
	}
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["toJson"] = toJSON
	funcs["fromJson"] = fromJSON
	funcs["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil // as with `helm template`: no cluster to look in
	}
	root.Funcs(funcs)

	for _, t := range templates {
		if _, err := root.New(t.name).Parse(t.content); err != nil {
			return "", fmt.Errorf("parse error in %s", strings.TrimPrefix(err.Error(), "template: "))
		}
	}

	var out strings.Builder
	for _, t := range templates {
		base := path.Base(t.name)
		isNotes := base == "NOTES.txt"
		if strings.HasPrefix(base, "_") || isNotes != o.notes {
			continue
		}
		if !isNotes && !strings.HasSuffix(base, ".yaml") && !strings.HasSuffix(base, ".yml") && !strings.HasSuffix(base, ".tpl") {
			continue
		}
		if strings.HasSuffix(base, ".tpl") {
			continue
		}
		data := map[string]interface{}{}
		for k, v := range top {
			data[k] = v
		}
		data["Template"] = map[string]interface{}{"Name": t.name, "BasePath": chartName + "/templates"}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, t.name, data); err != nil {
			return "", errors.New(strings.TrimPrefix(err.Error(), "template: "))
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if isNotes {
			out.WriteString(text)
			continue
		}
		for _, doc := range splitDocs(text) {
			var parsed interface{}
			if err := yaml.Unmarshal([]byte(doc), &parsed); err != nil {
				return "", fmt.Errorf("YAML parse error on %s: %s", t.name, err)
			}
			if parsed == nil {
				continue
			}
			if _, ok := parsed.(map[string]interface{}); !ok {
				return "", fmt.Errorf("YAML parse error on %s: a manifest must be a mapping", t.name)
			}
			fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", t.name, strings.TrimRight(strings.TrimLeft(doc, "\n"), " \n"))
		}
	}
	return out.String(), nil
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

func splitDocs(text string) []string {
	var docs []string
	for _, d := range docSep.Split(text, -1) {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, d)
		}
	}
	return docs
}
