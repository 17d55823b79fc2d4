// protogen writes the protobuf decoders and encoders of crates/runtime/protowire: one
// `impl Message` (src/generated.rs) and one `impl Encode` (src/generated_encode.rs) per
// Kubernetes type the controllers read and write, straight into and from k8s-openapi's
// struct of the same name.
//
//	cd hack/tools/protogen && go run . -emit decoders >../../../crates/runtime/protowire/src/generated.rs
//	cd hack/tools/protogen && go run . -emit encoders >../../../crates/runtime/protowire/src/generated_encode.rs
//
// (hack/update-protowire.sh does this; hack/verify-protowire.sh checks the files are not
// stale.) What a field looks like on the wire and what it must become in Rust is read from
// the Go types of the pinned release by reflection, not from generated.proto, because the
// .proto files lack what decides the Rust value:
//
//   - the `protobuf:` struct tag gives the field number and wire type (as generated.proto
//     does);
//   - the `json:` tag and the Go type say what the JSON path produces for a value Go
//     wrote: a non-pointer string, integer or bool with `omitempty` is always on the
//     protobuf wire, even when empty, but absent from JSON, so k8s-openapi has `None`
//     there; the decoder must drop the empty value to give the same struct. (The
//     encoder needs no such rule: it writes what the struct holds, and the server reads
//     an absent field and an empty one alike.)
//
// Both files are written from the same list of fields (fields, classify); emit.go
// formats them. Whether k8s-openapi made a field an `Option` is left to the Rust
// compiler: the generated code calls helpers generic over "a slot that takes a T" (`T`
// or `Option<T>`), so the generator never needs k8s-openapi's view of which fields are
// required.
package main

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// roots are the types decoders are generated for, with every struct type they reach.
var roots = []any{
	appsv1.Deployment{},
	corev1.ConfigMap{},
	corev1.Event{},
	corev1.Pod{},
	corev1.Secret{},
	corev1.Service{},
	coordinationv1.Lease{},
	eventsv1.Event{},
}

// special are types with a hand-written decoder in protowire's decode.rs (their Go
// types marshal themselves, not through generated code): Go type -> helper.
var special = map[reflect.Type]string{
	reflect.TypeOf(metav1.Time{}):        "time",
	reflect.TypeOf(metav1.MicroTime{}):   "micro_time",
	reflect.TypeOf(metav1.FieldsV1{}):    "fields_v1",
	reflect.TypeOf(resource.Quantity{}):  "quantity",
	reflect.TypeOf(intstr.IntOrString{}): "int_or_string",
}

func main() {
	emit := flag.String("emit", "decoders", "the file to write: decoders (generated.rs) or encoders (generated_encode.rs)")
	flag.Parse()
	g := &generator{seen: map[reflect.Type]bool{}}
	for _, r := range roots {
		g.visit(reflect.TypeOf(r))
	}
	sort.Slice(g.order, func(i, j int) bool { return rustPath(g.order[i]) < rustPath(g.order[j]) })
	var b strings.Builder
	var err error
	switch *emit {
	case "decoders":
		err = g.emitDecoders(&b)
	case "encoders":
		err = g.emitEncoders(&b)
	default:
		err = fmt.Errorf("-emit %q: want decoders or encoders", *emit)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
	os.Stdout.WriteString(b.String())
}

// rootPaths are the roots' k8s-openapi paths, sorted: the registry's tables list them.
func rootPaths() []string {
	var paths []string
	for _, r := range roots {
		paths = append(paths, rustPath(reflect.TypeOf(r)))
	}
	sort.Strings(paths)
	return paths
}

type generator struct {
	seen  map[reflect.Type]bool
	order []reflect.Type
}

// visit records t and every struct type its fields reach.
func (g *generator) visit(t reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return // []byte
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || g.seen[t] || special[t] != "" {
		return
	}
	g.seen[t] = true
	g.visitFields(t)
	g.order = append(g.order, t)
}

// visitFields visits the types of t's fields; an embedded struct inlined in JSON
// (e.g. EphemeralContainerCommon in EphemeralContainer) has no
// k8s-openapi struct of its own: its fields are the owner's, so only they are visited.
func (g *generator) visitFields(t reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("protobuf") == "" {
			continue
		}
		if inline(f) {
			g.visitFields(f.Type)
		} else {
			g.visit(f.Type)
		}
	}
}

// inline reports an embedded struct whose fields JSON flattens into its owner: an
// anonymous field without a JSON name (`json:""`, `json:",inline"`), as encoding/json
// treats it.
func inline(f reflect.StructField) bool {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return f.Anonymous && name == ""
}

// rustPath is k8s-openapi's path for a Go struct type.
func rustPath(t reflect.Type) string {
	pkg := t.PkgPath()
	var module string
	switch {
	case strings.HasPrefix(pkg, "k8s.io/api/"):
		module = "api::" + strings.ReplaceAll(strings.TrimPrefix(pkg, "k8s.io/api/"), "/", "::")
	case strings.HasPrefix(pkg, "k8s.io/apimachinery/"):
		module = "apimachinery::" + strings.ReplaceAll(strings.TrimPrefix(pkg, "k8s.io/apimachinery/"), "/", "::")
	default:
		panic("no k8s-openapi module for " + pkg)
	}
	return "k8s_openapi::" + module + "::" + t.Name()
}

// protoTag is a parsed `protobuf:"bytes,8,opt,name=creationTimestamp"` tag.
type protoTag struct {
	wire   string // varint, bytes, fixed64, ...
	number int
	name   string
}

func parseProtoTag(s string) (protoTag, error) {
	parts := strings.Split(s, ",")
	if len(parts) < 3 {
		return protoTag{}, fmt.Errorf("protobuf tag %q", s)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return protoTag{}, fmt.Errorf("protobuf tag %q: %v", s, err)
	}
	tag := protoTag{wire: parts[0], number: n}
	for _, p := range parts[2:] {
		if name, ok := strings.CutPrefix(p, "name="); ok {
			tag.name = name
		}
	}
	return tag, nil
}

// field is one protobuf field of a Go struct, as both directions see it: decode.rs and
// encode.rs have a helper of the same name for each kind of field.
type field struct {
	number int
	name   string // "Owner.jsonName", for decode errors
	rust   string // the k8s-openapi field, `self.<rust>`
	helper string // "string", "message", "repeated_int32", "map_quantity", "time", ...
	// message is the k8s-openapi type of a "message" or "repeated_message" field (the
	// helpers are generic over it).
	message string
	// scalar helpers (string, bytes, bool, int32, int64, double) decode with dropEmpty:
	// Go always writes the field, JSON omits its empty value (see the package doc).
	scalar, dropEmpty bool
	// managedFields is ObjectMeta.managedFields, which a reader may skip unparsed.
	managedFields bool
	// inline marks an embedded struct JSON flattens into its owner (e.g.
	// EphemeralContainerCommon): one message field on the wire, whose fields (inlined)
	// are the owner's k8s-openapi fields.
	inline  bool
	inlined []field
}

// fields are the protobuf fields of Go struct t, in field-number order (as
// generated.proto lists them and Go writes them).
func fields(t reflect.Type) ([]field, error) {
	var fs []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tagText := f.Tag.Get("protobuf")
		if tagText == "" || tagText == "-" {
			continue
		}
		tag, err := parseProtoTag(tagText)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %v", t.Name(), f.Name, err)
		}
		if inline(f) {
			inner, err := fields(f.Type)
			if err != nil {
				return nil, err
			}
			fs = append(fs, field{number: tag.number, name: t.Name() + "." + f.Name, inline: true, inlined: inner})
			continue
		}
		jsonName, omitEmpty := jsonTag(f)
		if jsonName == "" {
			jsonName = tag.name
		}
		fd, err := classify(t, f, omitEmpty)
		if err != nil {
			return nil, err
		}
		fd.number = tag.number
		fd.name = t.Name() + "." + jsonName
		fd.rust = rustField(jsonName)
		fd.managedFields = t == reflect.TypeOf(metav1.ObjectMeta{}) && jsonName == "managedFields"
		fs = append(fs, fd)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].number < fs[j].number })
	return fs, nil
}

// rustFields are the k8s-openapi field names of Go struct t: its JSON fields, with
// inlined embedded structs flattened, TypeMeta's apiVersion and kind left out (k8s-openapi
// implies them from the type).
func rustFields(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type == reflect.TypeOf(metav1.TypeMeta{}) {
			continue
		}
		if inline(f) {
			names = append(names, rustFields(f.Type)...)
			continue
		}
		name, _ := jsonTag(f)
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, rustField(name))
	}
	return names
}

func jsonTag(f reflect.StructField) (name string, omitEmpty bool) {
	parts := strings.Split(f.Tag.Get("json"), ",")
	for _, p := range parts[1:] {
		if p == "omitempty" || p == "omitzero" {
			omitEmpty = true
		}
	}
	return parts[0], omitEmpty
}

// classify finds the helper of field f of Go struct owner from its Go type.
func classify(owner reflect.Type, f reflect.StructField, omitEmpty bool) (field, error) {
	t := f.Type
	pointer := t.Kind() == reflect.Pointer
	if pointer {
		t = t.Elem()
	}
	scalar := func(helper string) (field, error) {
		// An empty value Go always writes but JSON omits (see the package doc).
		return field{helper: helper, scalar: true, dropEmpty: !pointer && omitEmpty}, nil
	}
	other := func(helper string) (field, error) { return field{helper: helper}, nil }
	switch {
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return scalar("bytes")
	case t.Kind() == reflect.Slice:
		elem := t.Elem()
		if h := special[elem]; h != "" {
			return other("repeated_" + h)
		}
		switch elem.Kind() {
		case reflect.String:
			return other("repeated_string")
		case reflect.Int32:
			return other("repeated_int32")
		case reflect.Int64:
			return other("repeated_int64")
		case reflect.Struct:
			return field{helper: "repeated_message", message: rustPath(elem)}, nil
		}
	case t.Kind() == reflect.Map:
		if t.Key().Kind() != reflect.String {
			return field{}, fmt.Errorf("%s.%s: map key %s", owner.Name(), f.Name, t.Key())
		}
		val := t.Elem()
		if h := special[val]; h != "" {
			return other("map_" + h)
		}
		switch {
		case val.Kind() == reflect.String:
			return other("map_string")
		case val.Kind() == reflect.Slice && val.Elem().Kind() == reflect.Uint8:
			return other("map_bytes")
		}
	case special[t] != "":
		return other(special[t])
	case t.Kind() == reflect.Struct:
		return field{helper: "message", message: rustPath(t)}, nil
	case t.Kind() == reflect.String:
		return scalar("string")
	case t.Kind() == reflect.Bool:
		return scalar("bool")
	case t.Kind() == reflect.Int32:
		return scalar("int32")
	case t.Kind() == reflect.Int64:
		return scalar("int64")
	case t.Kind() == reflect.Float64:
		return scalar("double")
	}
	return field{}, fmt.Errorf("%s.%s: no helper for Go type %s", owner.Name(), f.Name, f.Type)
}

// rustKeywords are renamed by k8s-openapi with a trailing underscore.
var rustKeywords = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "crate": true, "else": true,
	"enum": true, "extern": true, "false": true, "fn": true, "for": true, "if": true,
	"impl": true, "in": true, "let": true, "loop": true, "match": true, "mod": true,
	"move": true, "mut": true, "pub": true, "ref": true, "return": true, "self": true,
	"static": true, "struct": true, "super": true, "trait": true, "true": true, "type": true,
	"unsafe": true, "use": true, "where": true, "while": true,
}

// rustField is k8s-openapi's field name for a JSON name: snake case, an acronym kept
// whole ("podIPs" -> "pod_ips", "fieldsV1" -> "fields_v1"), keywords with a trailing
// underscore.
func rustField(json string) string {
	runes := []rune(json)
	var out []rune
	for i, c := range runes {
		if unicode.IsUpper(c) {
			prevLower := i > 0 && (unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1]))
			// The last capital of an acronym followed by lower case starts a word,
			// unless that lower case is only a plural "s" at the end or before a capital.
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			plural := nextLower && runes[i+1] == 's' && (i+2 == len(runes) || unicode.IsUpper(runes[i+2]))
			acronymEnd := i > 0 && unicode.IsUpper(runes[i-1]) && nextLower && !plural
			if prevLower || acronymEnd {
				out = append(out, '_')
			}
			out = append(out, unicode.ToLower(c))
		} else {
			out = append(out, c)
		}
	}
	name := string(out)
	if rustKeywords[name] {
		name += "_"
	}
	return name
}
