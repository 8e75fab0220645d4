package main

import (
	"reflect"
	"strings"
)

// jsonField is one documented field of the spec JSON: its path and JSON type.
type jsonField struct{ path, kind string }

// jsonFields lists every field path of v's JSON encoding: "a.b" for objects, "a[].b" for lists
// of objects, "a.*" for maps. README.md documents exactly these (README_test.go holds them equal).
func jsonFields(v any) []jsonField {
	var out []jsonField
	walkJSON(reflect.TypeOf(v), "", &out)
	return out
}

func walkJSON(t reflect.Type, prefix string, out *[]jsonField) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		path := prefix + name
		ft := f.Type
		if ft.Kind() == reflect.Ptr {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			walkJSON(ft, path+".", out)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			*out = append(*out, jsonField{path, "list"})
			walkJSON(ft.Elem(), path+"[].", out)
		case ft.Kind() == reflect.Map:
			*out = append(*out, jsonField{path, "map of " + kindName(ft.Elem())})
		case ft.Kind() == reflect.Slice:
			*out = append(*out, jsonField{path, "list of " + kindName(ft.Elem())})
		default:
			*out = append(*out, jsonField{path, kindName(ft)})
		}
	}
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Float32, reflect.Float64, reflect.Int, reflect.Int64, reflect.Int32:
		return "number"
	}
	return t.Kind().String()
}
