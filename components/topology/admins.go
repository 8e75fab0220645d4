package topology

import (
	"fmt"
	"os"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// CreatorAdminProblem refuses an adminRoleArns entry for the identity running `pulumi up`: EKS
// makes the cluster's creator an admin through an access entry of its own (pulumi-eks v2.8.1 sets
// accessConfig.bootstrapClusterCreatorAdminPermissions: true and offers no way to turn it off,
// pulumi/pulumi-eks#2373), and a second entry for the same principal fails the deployment with
// ResourceInUseException after the control plane exists. callerARN is GetCallerIdentity's Arn.
func CreatorAdminProblem(spec StackSpec, callerARN string) error {
	var errs ConfigErrors
	for i, arn := range spec.Cluster.AdminRoleARNs {
		if PrincipalIdentity(arn) != PrincipalIdentity(callerARN) {
			continue
		}
		key := fmt.Sprintf("%s[%d]", KeyAdminRoleARNs, i)
		errs = append(errs, ConfigError{File: spec.Source, Line: fileLineOf(spec.Source, key), Key: key,
			Message: fmt.Sprintf("%q is the identity running pulumi (%s), which EKS already makes cluster admin as the cluster's creator; "+
				"a second access entry for it fails with ResourceInUseException", arn, callerARN),
			Fix: "remove it from " + KeyAdminRoleARNs + " (it is admin already), or run pulumi as another identity"})
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// lineOf is the line of a config key ("ns:key" or "ns:key[i]") in a stack file; 0 if the file or
// key cannot be read (the value came from an ESC environment).
func fileLineOf(file, key string) int {
	config := fileConfig(file)
	name, index := key, -1
	if i := len(key) - 1; i > 0 && key[i] == ']' {
		for j := i; j >= 0; j-- {
			if key[j] == '[' {
				name = key[:j]
				index, _ = strconv.Atoi(key[j+1 : i])
				break
			}
		}
	}
	n := MappingValue(config, name)
	switch {
	case n == nil:
		return 0
	case index >= 0 && n.Kind == yaml.SequenceNode && index < len(n.Content):
		return n.Content[index].Line
	}
	return n.Line
}

// fileConfig is a stack file's config mapping; nil if the file cannot be read.
func fileConfig(file string) *yaml.Node {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	return MappingValue(doc.Content[0], "config")
}
