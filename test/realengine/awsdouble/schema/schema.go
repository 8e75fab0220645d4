// Package schema reads what the Pulumi aws provider of one version accepts as a resource's
// inputs, from the pulumi-aws Go SDK of that exact version (github.com/pulumi/pulumi-aws/sdk/v6
// in the module cache), so that the aws double (test/realengine/awsdouble) refuses at Check
// what that provider version would. Nothing is typed by hand: every name, type and required
// flag comes from the SDK source, which pulumi-aws generates from the provider's own schema.
//
// How the SDK says it (pulumi-aws sdk/v6/go/aws/<module>/<resource>.go and pulumiTypes*.go):
//   - the resource's constructor (NewCluster) registers it with its token
//     (ctx.RegisterResource("aws:eks/cluster:Cluster", …)) and refuses a nil required argument
//     ("invalid value for required argument 'RoleArn'"): those are the required inputs;
//   - its private args struct (clusterArgs, named by ClusterArgs.ElementType) tags every input
//     with its Pulumi name (`pulumi:"roleArn"`) and gives its Go type;
//   - a nested object is a struct of the same package (ClusterVpcConfig), whose non-pointer
//     scalar and struct fields are required; a list, map or any-typed field of a nested object
//     says nothing of its requiredness in Go, and is taken as optional;
//   - no enum type is used by an input field (pulumi-aws's schema gives enums as oneOf string):
//     enums constrain nothing here, as they constrain nothing in the SDK.
package schema

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Kind is a property's Pulumi type.
type Kind int

const (
	Any Kind = iota // interface{}: a string or a resource's reference, say
	String
	Integer
	Number
	Bool
	Array
	Map
	Object
	Asset // pulumi.Archive, pulumi.AssetOrArchive
)

var kindNames = [...]string{"any", "string", "integer", "number", "boolean", "array", "map", "object", "asset"}

func (k Kind) String() string { return kindNames[k] }

// Type is a property's type: Elem for arrays and maps, Object for objects.
type Type struct {
	Kind   Kind
	Elem   *Type
	Object *ObjectType
}

// Property is one input.
type Property struct {
	Name     string
	Type     *Type
	Required bool
}

// ObjectType is a resource's inputs or a nested object's properties, by Pulumi name.
type ObjectType struct {
	GoName     string
	Properties map[string]*Property
}

// Schema is the SDK of one pulumi-aws version, read package by package as tokens ask for them.
type Schema struct {
	dir string // the SDK module's directory: <GOMODCACHE>/github.com/pulumi/pulumi-aws/sdk/v6@vX

	mu       sync.Mutex
	packages map[string]*sdkPackage
}

// Load returns the schema of the SDK module in dir; packages are parsed when first needed.
func Load(dir string) (*Schema, error) {
	if _, err := os.Stat(filepath.Join(dir, "go", "aws", "provider.go")); err != nil {
		return nil, fmt.Errorf("%s is not a pulumi-aws sdk/v6 module directory: %w", dir, err)
	}
	return &Schema{dir: dir, packages: map[string]*sdkPackage{}}, nil
}

// Resource is the inputs of a resource type ("aws:eks/cluster:Cluster"). A token the SDK does
// not register is an error: the provider of that version has no such resource.
func (s *Schema) Resource(tok string) (*ObjectType, error) {
	module, ok := tokenModule(tok)
	if !ok {
		return nil, fmt.Errorf("%q is not an aws resource type token (aws:<module>/<name>:<Name>)", tok)
	}
	pkg, err := s.pkg(module)
	if err != nil {
		return nil, err
	}
	return pkg.resource(tok)
}

// tokenModule is the SDK package directory of a token: go/aws for "index", else go/aws/<module>.
func tokenModule(tok string) (string, bool) {
	parts := strings.Split(tok, ":")
	if len(parts) != 3 || parts[0] != "aws" {
		return "", false
	}
	module, _, ok := strings.Cut(parts[1], "/")
	if !ok {
		return "", false
	}
	if module == "index" {
		return "", true
	}
	return module, true
}

func (s *Schema) pkg(module string) (*sdkPackage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.packages[module]; ok {
		return p, nil
	}
	p, err := parsePackage(filepath.Join(s.dir, "go", "aws", module))
	if err != nil {
		return nil, err
	}
	s.packages[module] = p
	return p, nil
}

// sdkPackage is one parsed SDK package: its struct types, the constructor of each resource token
// and the method that names each public args type's private struct.
type sdkPackage struct {
	dir          string
	structs      map[string]*ast.StructType
	constructors map[string]*ast.FuncDecl // resource token → NewX
	elementTypes map[string]string        // XArgs → xArgs
	objects      map[string]*ObjectType   // resolved, by Go struct name
}

func parsePackage(dir string) (*sdkPackage, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("the SDK has no package %s: %w", dir, err)
	}
	p := &sdkPackage{dir: dir, structs: map[string]*ast.StructType{}, constructors: map[string]*ast.FuncDecl{},
		elementTypes: map[string]string{}, objects: map[string]*ObjectType{}}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok {
						if st, ok := ts.Type.(*ast.StructType); ok {
							p.structs[ts.Name.Name] = st
						}
					}
				}
			case *ast.FuncDecl:
				p.index(d)
			}
		}
	}
	return p, nil
}

// index records a resource constructor by the token it registers, and an args type's
// ElementType by the private struct it names.
func (p *sdkPackage) index(fn *ast.FuncDecl) {
	if fn.Body == nil {
		return
	}
	if fn.Recv != nil && fn.Name.Name == "ElementType" && len(fn.Recv.List) == 1 {
		recv, ok := fn.Recv.List[0].Type.(*ast.Ident)
		if !ok || !strings.HasSuffix(recv.Name, "Args") {
			return
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if star, ok := n.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok {
					p.elementTypes[recv.Name] = id.Name
					return false
				}
			}
			return true
		})
		return
	}
	if fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "New") {
		return
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "RegisterResource" {
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if tok, err := strconv.Unquote(lit.Value); err == nil {
					p.constructors[tok] = fn
				}
			}
		}
		return true
	})
}

// requiredArgument is the constructor's refusal of a nil required argument.
var requiredArgument = regexp.MustCompile(`^invalid value for required argument '(\w+)'$`)

func (p *sdkPackage) resource(tok string) (*ObjectType, error) {
	fn, ok := p.constructors[tok]
	if !ok {
		return nil, fmt.Errorf("the SDK in %s registers no resource %s", p.dir, tok)
	}
	args := argsType(fn)
	private, ok := p.elementTypes[args]
	if !ok {
		return nil, fmt.Errorf("%s: %s has no ElementType naming its private args struct", tok, args)
	}
	obj, err := p.object(private)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tok, err)
	}
	required := map[string]bool{}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				if m := requiredArgument.FindStringSubmatch(s); m != nil {
					required[m[1]] = true
				}
			}
		}
		return true
	})
	// The top level's requiredness is the constructor's, whatever the field's Go type.
	top := &ObjectType{GoName: obj.GoName, Properties: map[string]*Property{}}
	for name, prop := range obj.Properties {
		c := *prop
		c.Required = required[goFieldName(p.structs[private], name)]
		top.Properties[name] = &c
	}
	return top, nil
}

// argsType is the type name of a constructor's args parameter (*ClusterArgs → ClusterArgs).
func argsType(fn *ast.FuncDecl) string {
	for _, f := range fn.Type.Params.List {
		if star, ok := f.Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && strings.HasSuffix(id.Name, "Args") {
				return id.Name
			}
		}
	}
	return ""
}

// goFieldName is the Go name of the field tagged with a Pulumi name.
func goFieldName(st *ast.StructType, pulumiName string) string {
	for _, f := range st.Fields.List {
		if tagName(f) == pulumiName && len(f.Names) == 1 {
			return f.Names[0].Name
		}
	}
	return ""
}

func tagName(f *ast.Field) string {
	if f.Tag == nil {
		return ""
	}
	tag, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(reflect.StructTag(tag).Get("pulumi"), ",")
	return name
}

// object resolves a struct of the package into an ObjectType.
func (p *sdkPackage) object(goName string) (*ObjectType, error) {
	if o, ok := p.objects[goName]; ok {
		return o, nil
	}
	st, ok := p.structs[goName]
	if !ok {
		return nil, fmt.Errorf("no struct %s in %s", goName, p.dir)
	}
	o := &ObjectType{GoName: goName, Properties: map[string]*Property{}}
	p.objects[goName] = o // before the fields: a type that contains itself resolves to itself
	for _, f := range st.Fields.List {
		name := tagName(f)
		if name == "" {
			continue
		}
		typ, required, err := p.fieldType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", goName, name, err)
		}
		o.Properties[name] = &Property{Name: name, Type: typ, Required: required}
	}
	return o, nil
}

// fieldType is a field's type, and whether a nested object requires it (a non-pointer scalar
// or struct: the SDK makes every optional one a pointer).
func (p *sdkPackage) fieldType(e ast.Expr) (*Type, bool, error) {
	switch e := e.(type) {
	case *ast.StarExpr:
		t, _, err := p.fieldType(e.X)
		return t, false, err
	case *ast.ArrayType:
		elem, _, err := p.fieldType(e.Elt)
		return &Type{Kind: Array, Elem: elem}, false, err
	case *ast.MapType:
		elem, _, err := p.fieldType(e.Value)
		return &Type{Kind: Map, Elem: elem}, false, err
	case *ast.InterfaceType:
		return &Type{Kind: Any}, false, nil
	case *ast.SelectorExpr: // pulumi.Archive, pulumi.AssetOrArchive
		return &Type{Kind: Asset}, false, nil
	case *ast.Ident:
		switch e.Name {
		case "string":
			return &Type{Kind: String}, true, nil
		case "int":
			return &Type{Kind: Integer}, true, nil
		case "float64":
			return &Type{Kind: Number}, true, nil
		case "bool":
			return &Type{Kind: Bool}, true, nil
		}
		o, err := p.object(e.Name)
		if err != nil {
			return nil, false, err
		}
		return &Type{Kind: Object, Object: o}, true, nil
	}
	return nil, false, fmt.Errorf("a Go type the SDK does not use: %T", e)
}
