package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// decoder fills Go values from a parsed tree, reporting every problem at
// the line and column of the value concerned and in plain words (never a Go
// type name). Struct fields are matched by their json tag, so a field added
// to the scenario types is read with no change here.
type decoder struct {
	// doc is the document the nodes point into.
	doc []byte
	// aliases maps an accepted alternative key to the field's json name.
	aliases map[string]string
	// hooks decode the types whose JSON has more than one form.
	hooks map[reflect.Type]func(d *decoder, n *node, v reflect.Value, path string) error
	// warnings collects unknown keys and other things that are ignored.
	warnings []warning
	// pos records the offset of every struct field decoded, by path.
	pos map[string]int
}

type warning struct {
	off int
	msg string
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// typeWords names what a Go type expects, for error messages.
func typeWords(t reflect.Type) string {
	if t == rawMessageType {
		return "any JSON value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeWords(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value"
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func indexPath(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// keyPath names a map entry: script.parent, files["/a.md"].
func keyPath(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return joinPath(path, key)
	}
	return fmt.Sprintf("%s[%s]", path, strconv.Quote(key))
}

func label(path string) string {
	if path == "" {
		return "the scenario"
	}
	return path
}

func (d *decoder) mismatch(n *node, t reflect.Type, path string) error {
	return errAt(n.start, "%s must be %s, not %s", label(path), typeWords(t), n.kind.words())
}

type fieldInfo struct {
	index []int
	name  string
}

var fieldCache sync.Map // reflect.Type -> map[string]fieldInfo

// fieldsOf maps the json names of a struct's fields (embedded ones
// included) to their index paths.
func fieldsOf(t reflect.Type) map[string]fieldInfo {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]fieldInfo)
	}
	out := map[string]fieldInfo{}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous && f.Type.Kind() == reflect.Struct {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			tagName, _, _ := strings.Cut(tag, ",")
			if tagName == "-" {
				continue
			}
			if tagName != "" {
				name = tagName
			}
		}
		if _, dup := out[name]; !dup {
			out[name] = fieldInfo{index: f.Index, name: name}
		}
	}
	fieldCache.Store(t, out)
	return out
}

// value decodes n into v (addressable).
func (d *decoder) value(n *node, v reflect.Value, path string) error {
	if d.pos != nil {
		d.pos[path] = n.start
	}
	t := v.Type()
	if h, ok := d.hooks[t]; ok {
		return h(d, n, v, path)
	}
	if t == rawMessageType {
		if n.kind == kNull {
			v.SetBytes(nil)
			return nil
		}
		// Compact, as tool-call arguments and schemas are sent; the key
		// order is kept.
		var buf bytes.Buffer
		if err := json.Compact(&buf, d.raw(n)); err != nil {
			return errAt(n.start, "%s: %s", label(path), oneLine(err))
		}
		v.SetBytes(buf.Bytes())
		return nil
	}
	if t.Kind() == reflect.Pointer {
		if n.kind == kNull {
			v.SetZero()
			return nil
		}
		p := reflect.New(t.Elem())
		if err := d.value(n, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	if t.Kind() == reflect.Interface && t.NumMethod() == 0 {
		var x any
		if err := json.Unmarshal(d.raw(n), &x); err != nil {
			return errAt(n.start, "%s: %s", label(path), oneLine(err))
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	}
	if u, ok := v.Addr().Interface().(json.Unmarshaler); ok {
		if err := u.UnmarshalJSON(d.raw(n)); err != nil {
			return errAt(n.start, "%s: %s", label(path), oneLine(err))
		}
		return nil
	}
	if n.kind == kNull {
		// As in encoding/json, null leaves a value as it is.
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		if n.kind != kString {
			return d.mismatch(n, t, path)
		}
		v.SetString(n.str)
	case reflect.Bool:
		if n.kind != kBool {
			return d.mismatch(n, t, path)
		}
		v.SetBool(n.boolean)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.kind != kNumber {
			return d.mismatch(n, t, path)
		}
		text := string(d.raw(n))
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			f, ferr := strconv.ParseFloat(text, 64)
			if ferr == nil && f == math.Trunc(f) && math.Abs(f) > 1<<53 || errors.Is(ferr, strconv.ErrRange) {
				size := "large"
				if strings.HasPrefix(text, "-") {
					size = "small"
				}
				return errAt(n.start, "%s is too %s: %s", label(path), size, text)
			}
			if ferr != nil || f != math.Trunc(f) {
				return errAt(n.start, "%s must be a whole number, not %s", label(path), text)
			}
			i = int64(f)
		}
		if v.OverflowInt(i) {
			return errAt(n.start, "%s is too large: %s", label(path), text)
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.kind != kNumber {
			return d.mismatch(n, t, path)
		}
		text := string(d.raw(n))
		u, err := strconv.ParseUint(text, 10, 64)
		if err != nil || v.OverflowUint(u) {
			return errAt(n.start, "%s must be a whole number that is not negative, not %s", label(path), text)
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		if n.kind != kNumber {
			return d.mismatch(n, t, path)
		}
		text := string(d.raw(n))
		f, err := strconv.ParseFloat(text, t.Bits())
		if err != nil {
			return errAt(n.start, "%s is out of range: %s", label(path), text)
		}
		v.SetFloat(f)
	case reflect.Slice:
		if n.kind != kArray {
			return d.mismatch(n, t, path)
		}
		s := reflect.MakeSlice(t, len(n.items), len(n.items))
		for i, it := range n.items {
			if err := d.value(it, s.Index(i), indexPath(path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Map:
		if n.kind != kObject || t.Key().Kind() != reflect.String {
			return d.mismatch(n, t, path)
		}
		m := reflect.MakeMapWithSize(t, len(n.members))
		for _, mb := range n.members {
			ev := reflect.New(t.Elem()).Elem()
			kp := keyPath(path, mb.key)
			if err := d.value(mb.val, ev, kp); err != nil {
				return err
			}
			if d.pos != nil {
				d.pos[kp] = mb.keyPos // an entry is best pointed at by its key
			}
			m.SetMapIndex(reflect.ValueOf(mb.key).Convert(t.Key()), ev)
		}
		v.Set(m)
	case reflect.Struct:
		if n.kind != kObject {
			return d.mismatch(n, t, path)
		}
		return d.object(n, v, path)
	default:
		return errAt(n.start, "%s cannot be read from a scenario", label(path))
	}
	return nil
}

// object decodes an object into a struct: keys are matched to json tags
// (then to aliases); unknown keys are warnings.
func (d *decoder) object(n *node, v reflect.Value, path string) error {
	fields := fieldsOf(v.Type())
	present := map[string]bool{}
	for _, m := range n.members {
		present[m.key] = true
	}
	for _, m := range n.members {
		name := m.key
		f, ok := fields[name]
		if !ok {
			if a, isAlias := d.aliases[name]; isAlias {
				if af, known := fields[a]; known {
					if present[a] {
						d.warn(m.keyPos, "both %q and %q are given in %s; %q is used", name, a, label(path), a)
						continue
					}
					f, ok, name = af, true, a
				}
			}
		}
		if !ok {
			d.warn(m.keyPos, "unknown key %q in %s (ignored)", m.key, label(path))
			continue
		}
		fp := joinPath(path, name)
		if err := d.value(m.val, v.FieldByIndex(f.index), fp); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) warn(off int, format string, args ...any) {
	d.warnings = append(d.warnings, warning{off: off, msg: fmt.Sprintf(format, args...)})
}

// raw returns the text of n.
func (d *decoder) raw(n *node) []byte { return d.doc[n.start:n.end] }
