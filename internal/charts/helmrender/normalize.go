package helmrender

import (
	"fmt"

	"github.com/gpucluster/gpucluster/internal/charts"
)

// clusterScoped are the built-in kinds that have no namespace, by "group/Kind": the list
// `kubectl api-resources --namespaced=false` prints. Written down here, not yet held to a live
// API server's discovery; the tier's comparison with what the provider applied will hold it.
var clusterScoped = map[string]bool{
	"/Namespace": true, "/Node": true, "/PersistentVolume": true, "/ComponentStatus": true,
	"rbac.authorization.k8s.io/ClusterRole": true, "rbac.authorization.k8s.io/ClusterRoleBinding": true,
	"apiextensions.k8s.io/CustomResourceDefinition":                 true,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration":   true,
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":     true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicy":        true,
	"admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding": true,
	"admissionregistration.k8s.io/MutatingAdmissionPolicy":          true,
	"admissionregistration.k8s.io/MutatingAdmissionPolicyBinding":   true,
	"apiregistration.k8s.io/APIService":                             true,
	"scheduling.k8s.io/PriorityClass":                               true,
	"storage.k8s.io/StorageClass":                                   true,
	"storage.k8s.io/CSIDriver":                                      true,
	"storage.k8s.io/CSINode":                                        true,
	"storage.k8s.io/VolumeAttachment":                               true,
	"storage.k8s.io/VolumeAttributesClass":                          true,
	"node.k8s.io/RuntimeClass":                                      true,
	"networking.k8s.io/IngressClass":                                true,
	"networking.k8s.io/IPAddress":                                   true,
	"networking.k8s.io/ServiceCIDR":                                 true,
	"certificates.k8s.io/CertificateSigningRequest":                 true,
	"certificates.k8s.io/ClusterTrustBundle":                        true,
	"flowcontrol.apiserver.k8s.io/FlowSchema":                       true,
	"flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration":       true,
	"resource.k8s.io/DeviceClass":                                   true,
	"resource.k8s.io/ResourceSlice":                                 true,
	"authentication.k8s.io/TokenReview":                             true,
	"authentication.k8s.io/SelfSubjectReview":                       true,
	"authorization.k8s.io/SubjectAccessReview":                      true,
	"authorization.k8s.io/SelfSubjectAccessReview":                  true,
	"authorization.k8s.io/SelfSubjectRulesReview":                   true,
}

// normalize gives every namespaced object without a namespace the release's, as the provider's
// yaml/v2 Normalize does: a kind is cluster-scoped when it is a built-in one that is, or when a
// CRD of the same render says so (the provider looks there before asking the cluster).
func normalize(objs []charts.Object, namespace string) ([]charts.Object, error) {
	crdScope := map[string]string{}
	for _, o := range objs {
		if o.Kind() != "CustomResourceDefinition" {
			continue
		}
		spec, _ := o.Manifest["spec"].(map[string]any)
		names, _ := spec["names"].(map[string]any)
		group, _ := spec["group"].(string)
		kind, _ := names["kind"].(string)
		scope, _ := spec["scope"].(string)
		crdScope[group+"/"+kind] = scope
	}
	for _, o := range objs {
		if o.Kind() == "" || o.APIVersion() == "" {
			return nil, fmt.Errorf("%s: an object without kind or apiVersion", o.Source)
		}
		if o.Name() == "" {
			return nil, fmt.Errorf("%s: a %s without metadata.name", o.Source, o.Kind())
		}
		key := o.Group() + "/" + o.Kind()
		if clusterScoped[key] || crdScope[key] == "Cluster" || o.Namespace() != "" {
			continue
		}
		md, _ := o.Manifest["metadata"].(map[string]any)
		md["namespace"] = namespace
	}
	return objs, nil
}
