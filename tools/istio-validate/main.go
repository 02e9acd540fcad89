// Command istio-validate runs Istio's own validating admission webhook over YAML: every document is
// sent, as the API server would send it, to the handler istiod serves for rev.validation.istio.io
// (istio.io/istio/pkg/webhooks/validation/server, built with the schemas istiod gives it:
// collections.PilotGatewayAPI()). The verdict, the denial message and the warnings are the
// webhook's own. Errors are also listed one by one from the same code path the webhook runs
// (crd.ConvertObject, then the schema's ValidateConfig).
//
// The webhook decodes spec with unknown fields allowed (protomarshal.ApplyJSON falls back to
// AllowUnknownFields); in a cluster such fields are pruned, or rejected under strict field
// validation, by the API server's structural CRD schema before the webhook sees the object. This
// tool reports them separately (unknownFields, from a strict proto decoding) and, with --strict,
// counts them as errors.
//
// Only documents of the groups the webhook is registered for (networking, security, telemetry,
// extensions .istio.io) are validated; others are listed with "validated": false.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"

	multierror "github.com/hashicorp/go-multierror"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubeyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"istio.io/istio/pilot/pkg/config/kube/crd"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/schema/collection"
	"istio.io/istio/pkg/config/schema/collections"
	"istio.io/istio/pkg/config/schema/resource"
	"istio.io/istio/pkg/log"
	"istio.io/istio/pkg/webhooks/validation/server"
)

const usage = `istio-validate: Istio's validating webhook (istiod's /validate handler) over YAML documents.

usage: istio-validate [flags] [PATH ...]

PATH is a YAML file (multi-document) or a directory (every *.yaml / *.yml under it, sorted);
none or "-" reads standard input. One JSON object per document is written to standard output,
one per line:

  {"file":"…","document":0,"apiVersion":"networking.istio.io/v1","kind":"VirtualService",
   "namespace":"default","name":"reviews","validated":true,"valid":false,
   "message":"configuration is invalid: …","errors":["…"],"warnings":["…"],"unknownFields":[]}

document counts the non-empty documents of a file from 0. validated is false for documents the
webhook is not registered for (groups other than networking, security, telemetry and
extensions .istio.io); they are never invalid. A document that is not YAML, or has no kind,
is invalid. Exit status: 0 when every document is valid, 1 when any is invalid, 2 on a usage
or read error.

flags:
`

var webhookGroups = map[string]bool{
	"networking.istio.io": true,
	"security.istio.io":   true,
	"telemetry.istio.io":  true,
	"extensions.istio.io": true,
}

type result struct {
	File          string   `json:"file"`
	Document      int      `json:"document"`
	APIVersion    string   `json:"apiVersion"`
	Kind          string   `json:"kind"`
	Namespace     string   `json:"namespace"`
	Name          string   `json:"name"`
	Validated     bool     `json:"validated"`
	Valid         bool     `json:"valid"`
	Message       string   `json:"message,omitempty"`
	Errors        []string `json:"errors"`
	Warnings      []string `json:"warnings"`
	UnknownFields []string `json:"unknownFields"`
}

type validator struct {
	mux          *http.ServeMux
	schemas      collection.Schemas
	domainSuffix string
	namespace    string
	strict       bool
	seq          int
}

func main() {
	flags := flag.NewFlagSet("istio-validate", flag.ContinueOnError)
	flags.SetOutput(os.Stderr)
	flags.Usage = func() {
		fmt.Fprint(os.Stderr, usage)
		flags.PrintDefaults()
	}
	domain := flags.String("domain-suffix", "cluster.local", "the cluster's DNS domain suffix, as istiod's --domain")
	namespace := flags.String("default-namespace", "default", "namespace given to namespaced objects that have none (as kubectl apply does)")
	strict := flags.Bool("strict", false, "count spec fields unknown to Istio's protos as errors (the API server would prune or reject them)")
	quiet := flags.Bool("quiet", false, "no summary line on standard error")
	if err := flags.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}

	// istiod's scopes log to stdout at info by default; the JSON stream owns stdout.
	opts := log.DefaultOptions()
	opts.OutputPaths = []string{"stderr"}
	opts.ErrorOutputPaths = []string{"stderr"}
	if err := log.Configure(opts); err != nil {
		fmt.Fprintf(os.Stderr, "istio-validate: configuring logs: %v\n", err)
		os.Exit(2)
	}
	for _, s := range log.Scopes() {
		s.SetOutputLevel(log.ErrorLevel)
	}

	v := &validator{
		mux:          http.NewServeMux(),
		schemas:      collections.PilotGatewayAPI(),
		domainSuffix: *domain,
		namespace:    *namespace,
		strict:       *strict,
	}
	if _, err := server.New(server.Options{Schemas: v.schemas, DomainSuffix: v.domainSuffix, Mux: v.mux}); err != nil {
		fmt.Fprintf(os.Stderr, "istio-validate: starting the webhook handler: %v\n", err)
		os.Exit(2)
	}

	files, err := inputs(flags.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "istio-validate: %v\n", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	total, validated, invalid := 0, 0, 0
	for _, f := range files {
		data, err := readInput(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "istio-validate: %v\n", err)
			os.Exit(2)
		}
		docs, err := splitDocuments(data)
		if err != nil {
			r := result{File: f, Document: len(docs), Errors: []string{fmt.Sprintf("splitting YAML documents: %v", err)}}
			docs = nil
			emit(enc, &r)
			total++
			invalid++
		}
		for i, doc := range docs {
			r := v.check(doc)
			r.File = f
			r.Document = i
			emit(enc, r)
			total++
			if r.Validated {
				validated++
			}
			if !r.Valid {
				invalid++
			}
		}
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintf(os.Stderr, "istio-validate: writing: %v\n", err)
		os.Exit(2)
	}
	if !*quiet {
		fmt.Fprintf(os.Stderr, "istio-validate: %d documents, %d sent to the webhook, %d invalid\n", total, validated, invalid)
	}
	if invalid > 0 {
		os.Exit(1)
	}
}

func emit(enc *json.Encoder, r *result) {
	if r.Errors == nil {
		r.Errors = []string{}
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	if r.UnknownFields == nil {
		r.UnknownFields = []string{}
	}
	if err := enc.Encode(r); err != nil {
		fmt.Fprintf(os.Stderr, "istio-validate: writing: %v\n", err)
		os.Exit(2)
	}
}

// inputs expands the arguments: directories into their *.yaml / *.yml files, sorted.
func inputs(args []string) ([]string, error) {
	if len(args) == 0 {
		return []string{"-"}, nil
	}
	var files []string
	for _, a := range args {
		if a == "-" {
			files = append(files, a)
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

func readInput(f string) ([]byte, error) {
	if f == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(f)
}

// splitDocuments returns the non-empty YAML documents of a stream (comments-only and null
// documents are dropped).
func splitDocuments(data []byte) ([][]byte, error) {
	r := kubeyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err == nil && (len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null") {
			continue
		}
		docs = append(docs, doc)
	}
}

type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

func (v *validator) check(doc []byte) *result {
	r := &result{}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		r.Errors = []string{fmt.Sprintf("not YAML: %v", err)}
		return r
	}
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		r.Errors = []string{fmt.Sprintf("not an object: %v", err)}
		return r
	}
	var h header
	if err := json.Unmarshal(js, &h); err != nil {
		r.Errors = []string{fmt.Sprintf("bad apiVersion/kind/metadata: %v", err)}
		return r
	}
	r.APIVersion, r.Kind, r.Name, r.Namespace = h.APIVersion, h.Kind, h.Metadata.Name, h.Metadata.Namespace
	if h.Kind == "" || h.APIVersion == "" {
		r.Errors = []string{"the document has no apiVersion or kind"}
		return r
	}
	gv, err := schema.ParseGroupVersion(h.APIVersion)
	if err != nil {
		r.Errors = []string{fmt.Sprintf("bad apiVersion: %v", err)}
		return r
	}
	gvk := gv.WithKind(h.Kind)
	if !webhookGroups[gvk.Group] {
		r.Valid = true
		return r
	}
	r.Validated = true

	s, known := v.schemas.FindByGroupKind(resource.FromKubernetesGVK(&gvk))
	if r.Namespace == "" && (!known || !s.IsClusterScoped()) {
		r.Namespace = v.namespace
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			obj["metadata"] = meta
		}
		meta["namespace"] = v.namespace
		if js, err = json.Marshal(obj); err != nil {
			r.Errors = []string{err.Error()}
			return r
		}
	}

	resp, err := v.admit(gvk, s, known, r.Namespace, r.Name, js)
	if err != nil {
		r.Errors = []string{fmt.Sprintf("calling the webhook handler: %v", err)}
		return r
	}
	r.Valid = resp.Allowed
	r.Warnings = resp.Warnings
	if !resp.Allowed {
		if resp.Result != nil {
			r.Message = resp.Result.Message
		}
		r.Errors = v.splitErrors(s, known, js, r.Message)
	}
	if known {
		if msg := unknownFields(s, obj["spec"]); msg != "" {
			r.UnknownFields = []string{msg}
			if v.strict {
				r.Valid = false
				r.Errors = append(r.Errors, "unknown field (strict): "+msg)
			}
		}
	}
	return r
}

// admit posts an AdmissionReview for a CREATE of the object to istiod's /validate handler.
func (v *validator) admit(gvk schema.GroupVersionKind, s resource.Schema, known bool, ns, name string, raw []byte) (*admissionv1.AdmissionResponse, error) {
	v.seq++
	plural := strings.ToLower(gvk.Kind) + "s"
	if known {
		plural = s.Plural()
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID(fmt.Sprintf("istio-validate-%d", v.seq)),
			Kind:      metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind},
			Resource:  metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: plural},
			Name:      name,
			Namespace: ns,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(&review)
	if err != nil {
		return nil, err
	}
	req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	v.mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		return nil, fmt.Errorf("decoding the AdmissionReview response: %v", err)
	}
	if out.Response == nil {
		return nil, errors.New("the AdmissionReview has no response")
	}
	return out.Response, nil
}

// splitErrors lists the errors of a denial one by one: the webhook joins ValidateConfig's
// multierror into one message; the same conversion and ValidateConfig give the parts. Denials
// that do not come from ValidateConfig (decoding, unknown type, unknown top-level field) are the
// webhook's message.
func (v *validator) splitErrors(s resource.Schema, known bool, js []byte, message string) []string {
	if !known {
		return []string{message}
	}
	var obj crd.IstioKind
	if err := json.Unmarshal(js, &obj); err != nil {
		return []string{message}
	}
	cfg, err := crd.ConvertObject(s, &obj, v.domainSuffix)
	if err != nil {
		return []string{message}
	}
	_, err = s.ValidateConfig(*cfg)
	if err == nil {
		return []string{message}
	}
	var me *multierror.Error
	if errors.As(err, &me) && len(me.Errors) > 0 {
		parts := make([]string, 0, len(me.Errors))
		for _, e := range me.Errors {
			parts = append(parts, e.Error())
		}
		return parts
	}
	return []string{err.Error()}
}

// unknownFields decodes spec strictly into the kind's proto; the message names the first field
// the proto does not have ("" when there is none).
func unknownFields(s resource.Schema, spec any) string {
	if spec == nil {
		return ""
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return ""
	}
	inst, err := s.NewInstance()
	if err != nil {
		return ""
	}
	if err := config.ApplyJSONStrict(inst, string(js)); err != nil {
		if loose, lerr := s.NewInstance(); lerr == nil && config.ApplyJSON(loose, string(js)) == nil {
			return err.Error()
		}
	}
	return ""
}
