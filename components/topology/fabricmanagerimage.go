package topology

import (
	"fmt"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// checkFabricManagerImage refuses a pool whose fabric manager gpucluster runs (a DaemonSet) when
// the stack names no image for it. The DaemonSet installs nothing when it starts, from a mirror
// that may be down or may serve something else by then: it runs the stack's own image, pinned by
// digest (KeyFabricManagerImage). An image no pool runs is a warning.
func (r *reader) checkFabricManagerImage(st Stack, lines map[string]int) {
	used := false
	for _, p := range st.Pools {
		it, known := catalog.Lookup(p.Profile.InstanceType)
		if !known || !deriveFabricManager(p.Profile, it).Deploy {
			continue
		}
		used = true
		if st.FabricManagerImage == "" {
			r.fail(p.typeLine, KeyFabricManagerImage,
				fmt.Sprintf("set %s to an image holding nv-fabricmanager %s, pinned by digest (docs/fabric-manager.md builds one), or set fabricManager: host if the pool's image runs fabric manager itself",
					KeyFabricManagerImage, st.DriverVersion),
				"pool %s (%s) runs fabric manager in gpucluster's DaemonSet (its image is custom), and the stack names no image for it%s", p.Name, it.Name, r.unseenEnvironments())
		}
	}
	if !used && st.FabricManagerImage != "" {
		r.warn(lines[KeyFabricManagerImage], KeyFabricManagerImage, "remove "+KeyFabricManagerImage,
			"no pool runs fabric manager in gpucluster's DaemonSet, so nothing runs this image")
	}
}
