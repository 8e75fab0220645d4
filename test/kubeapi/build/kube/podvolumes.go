package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A container's file system is its pod's root directory (the container is chrooted there): its
// image is the one binary the stand-in runs for it, and every volume mount is materialised at
// its mount path as a kubelet projects it — a ConfigMap's or Secret's keys as files (kept up to
// date while the pod runs, which a certificate rotator that writes its Secret waits for), a
// service account token from the TokenRequest API, the downward API, an empty directory.

// errNotReady is a volume whose source does not exist yet: the pod waits, as a kubelet's pod
// waits in ContainerCreating for a Secret a controller has not written.
type errNotReady struct{ what string }

func (e errNotReady) Error() string { return e.what }

// volumeFiles are one volume's files, by path inside it; nil for an emptyDir.
func volumeFiles(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, vol v1.Volume) (map[string][]byte, error) {
	src := vol.VolumeSource
	switch {
	case src.EmptyDir != nil:
		return nil, nil
	case src.ConfigMap != nil:
		return configMapFiles(ctx, client, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional)
	case src.Secret != nil:
		return secretFiles(ctx, client, pod.Namespace, src.Secret.SecretName, src.Secret.Items, src.Secret.Optional)
	case src.DownwardAPI != nil:
		return downwardFiles(pod, src.DownwardAPI.Items)
	case src.Projected != nil:
		files := map[string][]byte{}
		for _, p := range src.Projected.Sources {
			var part map[string][]byte
			var err error
			switch {
			case p.ConfigMap != nil:
				part, err = configMapFiles(ctx, client, pod.Namespace, p.ConfigMap.Name, p.ConfigMap.Items, p.ConfigMap.Optional)
			case p.Secret != nil:
				part, err = secretFiles(ctx, client, pod.Namespace, p.Secret.Name, p.Secret.Items, p.Secret.Optional)
			case p.DownwardAPI != nil:
				part, err = downwardFiles(pod, p.DownwardAPI.Items)
			case p.ServiceAccountToken != nil:
				part, err = tokenFile(ctx, client, pod, p.ServiceAccountToken)
			default:
				err = fmt.Errorf("volume %s: a projected source the kubelet stand-in does not project", vol.Name)
			}
			if err != nil {
				return nil, err
			}
			for k, v := range part {
				files[k] = v
			}
		}
		return files, nil
	}
	return nil, fmt.Errorf("volume %s: a volume type the kubelet stand-in does not mount (it mounts configMap, secret, projected, downwardAPI, emptyDir)", vol.Name)
}

// missingSource is a ConfigMap or Secret a volume names that does not exist: no files when the
// volume is optional, else not ready yet (the pod waits for it, as a kubelet's does).
func missingSource(optional *bool, what string) (map[string][]byte, error) {
	if optional != nil && *optional {
		return map[string][]byte{}, nil
	}
	return nil, errNotReady{what + " not found"}
}

func configMapFiles(ctx context.Context, client kubernetes.Interface, ns, name string, items []v1.KeyToPath, optional *bool) (map[string][]byte, error) {
	cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return missingSource(optional, fmt.Sprintf("configmap %q", name))
	}
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, "configmap "+name)
}

func secretFiles(ctx context.Context, client kubernetes.Interface, ns, name string, items []v1.KeyToPath, optional *bool) (map[string][]byte, error) {
	s, err := client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return missingSource(optional, fmt.Sprintf("secret %q", name))
	}
	if err != nil {
		return nil, err
	}
	return keyFiles(s.Data, items, "secret "+name)
}

// keyFiles are every key as a file of its name, or the items' keys at their paths; an item
// whose key is missing waits, as the kubelet's does.
func keyFiles(data map[string][]byte, items []v1.KeyToPath, what string) (map[string][]byte, error) {
	if len(items) == 0 {
		return data, nil
	}
	out := map[string][]byte{}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, errNotReady{fmt.Sprintf("%s has no key %q", what, it.Key)}
		}
		out[it.Path] = v
	}
	return out, nil
}

func downwardFiles(pod *v1.Pod, items []v1.DownwardAPIVolumeFile) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, it := range items {
		if it.FieldRef == nil {
			return nil, fmt.Errorf("downward API file %s: only fieldRef is projected by the kubelet stand-in", it.Path)
		}
		v, err := podField(pod, it.FieldRef.FieldPath)
		if err != nil {
			return nil, err
		}
		out[it.Path] = []byte(v)
	}
	return out, nil
}

// tokenFile asks the API server for the pod's service account token, bound to the pod, as the
// kubelet does for a projected token (its audience, its lifetime).
func tokenFile(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) (map[string][]byte, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: p.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	tok, err := client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for service account %s/%s: %w", pod.Namespace, pod.Spec.ServiceAccountName, err)
	}
	return map[string][]byte{p.Path: []byte(tok.Status.Token)}, nil
}

// podField is a downward API field of the pod.
func podField(pod *v1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	return "", fmt.Errorf("downward API field %s: not one the kubelet stand-in knows", path)
}

// mountVolumes materialises a container's volume mounts under root (first: the container is
// starting; later calls refresh what a kubelet keeps up to date). A subPath mount is a copy made once, as a kubelet's subPath mount does not follow
// later changes of its source; a directory mount is rewritten file by file, each replaced by a
// rename so that a reader never sees half a certificate.
func mountVolumes(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, c v1.Container, root string, first bool) error {
	vols := map[string]v1.Volume{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range c.VolumeMounts {
		vol, ok := vols[m.Name]
		if !ok {
			return fmt.Errorf("container %s mounts volume %s, which the pod does not have", c.Name, m.Name)
		}
		if m.SubPath != "" && !first {
			continue
		}
		files, err := volumeFiles(ctx, client, pod, vol)
		if err != nil {
			return err
		}
		target := filepath.Join(root, m.MountPath)
		if m.SubPath != "" {
			data, ok := files[m.SubPath]
			if !ok && vol.EmptyDir == nil {
				return errNotReady{fmt.Sprintf("volume %s has no %s", m.Name, m.SubPath)}
			}
			if err := writeIfChanged(target, data); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(target, 0o755); err != nil {
			return err
		}
		for p, data := range files {
			if err := writeIfChanged(filepath.Join(target, p), data); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeIfChanged(file string, data []byte) error {
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// containerEnv is a container's environment as the kubelet makes it: the service variables the
// in-cluster client reads (the API server at the pods' gateway), HOSTNAME, then envFrom and env
// with their references resolved.
func containerEnv(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, c v1.Container, apiHost, apiPort string) ([]string, error) {
	env := []string{"PATH=/", "PWD=/", "HOSTNAME=" + pod.Name,
		"KUBERNETES_SERVICE_HOST=" + apiHost, "KUBERNETES_SERVICE_PORT=" + apiPort, "KUBERNETES_SERVICE_PORT_HTTPS=" + apiPort}
	for _, from := range c.EnvFrom {
		var data map[string][]byte
		var err error
		switch {
		case from.ConfigMapRef != nil:
			data, err = configMapFiles(ctx, client, pod.Namespace, from.ConfigMapRef.Name, nil, from.ConfigMapRef.Optional)
		case from.SecretRef != nil:
			data, err = secretFiles(ctx, client, pod.Namespace, from.SecretRef.Name, nil, from.SecretRef.Optional)
		}
		if err != nil {
			return nil, err
		}
		for k, v := range data {
			env = append(env, from.Prefix+k+"="+string(v))
		}
	}
	for _, e := range c.Env {
		v := e.Value
		if src := e.ValueFrom; src != nil {
			var err error
			switch {
			case src.FieldRef != nil:
				v, err = podField(pod, src.FieldRef.FieldPath)
			case src.ConfigMapKeyRef != nil:
				var data map[string][]byte
				if data, err = configMapFiles(ctx, client, pod.Namespace, src.ConfigMapKeyRef.Name, nil, src.ConfigMapKeyRef.Optional); err == nil {
					v = string(data[src.ConfigMapKeyRef.Key])
				}
			case src.SecretKeyRef != nil:
				var data map[string][]byte
				if data, err = secretFiles(ctx, client, pod.Namespace, src.SecretKeyRef.Name, nil, src.SecretKeyRef.Optional); err == nil {
					v = string(data[src.SecretKeyRef.Key])
				}
			case src.ResourceFieldRef != nil:
				v, err = resourceField(c, src.ResourceFieldRef)
			}
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
		}
		env = append(env, e.Name+"="+expandEnv(v, env))
	}
	return env, nil
}

// resourceField is a container's request or limit, in the reference's divisor (GOMAXPROCS from
// limits.cpu is the common use); a limit not set is the node's allocatable, which the stand-in
// takes as this machine's CPUs.
func resourceField(c v1.Container, ref *v1.ResourceFieldSelector) (string, error) {
	var q, ok = c.Resources.Limits[v1.ResourceName(strings.TrimPrefix(ref.Resource, "limits."))]
	if strings.HasPrefix(ref.Resource, "requests.") {
		q, ok = c.Resources.Requests[v1.ResourceName(strings.TrimPrefix(ref.Resource, "requests."))]
	}
	if !ok && ref.Resource == "limits.cpu" {
		q, ok = *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI), true
	}
	if !ok {
		return "", fmt.Errorf("resource %s is not set on the container", ref.Resource)
	}
	div := ref.Divisor
	if div.IsZero() {
		return fmt.Sprint(q.Value()), nil
	}
	// The kubelet rounds up (pkg/api/v1/resource ExtractContainerResourceValue).
	return fmt.Sprint((q.MilliValue() + div.MilliValue() - 1) / div.MilliValue()), nil
}

// expandEnv replaces $(VAR) with an earlier variable's value, as the kubelet does.
func expandEnv(v string, env []string) string {
	if !strings.Contains(v, "$(") {
		return v
	}
	for i := len(env) - 1; i >= 0; i-- {
		k, val, _ := strings.Cut(env[i], "=")
		v = strings.ReplaceAll(v, "$("+k+")", val)
	}
	return v
}
