package enginetest

import (
	"strings"

	"github.com/gpucluster/gpucluster/test/realengine/awsdouble/schema"
	"github.com/gpucluster/gpucluster/test/realengine/record"
)

// checkAWSProviderVersions: the engine loaded the aws provider at every version a user's `pulumi
// up` loads (go.mod's and pulumi-eks's bundled one, realengine.Env.AWSVersions), and every input
// of every create and update exists in the pulumi-aws SDK of the version that served it.
func (d *Deployment) checkAWSProviderVersions(calls []record.Call) {
	schemas := map[string]*schema.Schema{}
	for _, v := range d.Env.AWSVersions {
		dir, err := schema.SDKDir(v)
		if err == nil {
			schemas[v], err = schema.Load(dir)
		}
		if err != nil {
			d.t.Fatal(err)
		}
	}
	served := map[string]bool{}
	for _, c := range calls {
		if c.Op != "create" && c.Op != "update" {
			continue
		}
		served[c.Version] = true
		s, ok := schemas[c.Version]
		if !ok {
			d.t.Errorf("%s: %s of %s was served by aws %q, which no user's pulumi up loads (%v)", d.name, c.Op, c.URN, c.Version, d.Env.AWSVersions)
			continue
		}
		t, err := s.Resource(c.Type)
		if err != nil {
			d.t.Errorf("%s: %s of %s: %v", d.name, c.Op, c.URN, err)
			continue
		}
		if unknown := schema.UnknownKeys(t, c.Inputs); len(unknown) > 0 {
			d.t.Errorf("%s: %s of %s at aws %s has inputs its SDK does not: %s", d.name, c.Op, c.URN, c.Version, strings.Join(unknown, ", "))
		}
	}
	for _, v := range d.Env.AWSVersions {
		if !served[v] {
			d.t.Errorf("%s: no resource was created or updated by the aws provider %s; a user's pulumi up loads %v", d.name, v, d.Env.AWSVersions)
		}
	}
}
