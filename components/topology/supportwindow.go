package topology

import (
	"fmt"
	"math"
	"time"
)

// clock is the time a stack is loaded at: the day the plan is made, or `pulumi up` runs. The
// support window and the cost guard price the control plane by it; tests set it.
var clock = time.Now

// SupportWarningDays is how far ahead the end of a version's standard support is warned of.
const SupportWarningDays = 30

// checkSupportWindow warns, at the kubernetesVersion line, when the control plane costs the
// extended-support price now, or will within SupportWarningDays or before the stack's expiry:
// EKS bills it from the day the version leaves standard support, unasked (the default upgrade
// policy, EXTENDED), and the only way back to $0.10 is an upgrade.
func checkSupportWindow(spec *StackSpec, st Stack, now time.Time) {
	ends := StandardSupportEnds(spec.Cluster.KubernetesVersion)
	if ends.IsZero() {
		return
	}
	v, day := spec.Cluster.KubernetesVersion, ends.Format(time.DateOnly)
	price := fmt.Sprintf("the control plane costs $%.2f per hour instead of $%.2f", EKSExtendedSupportUSDPerHour, EKSControlPlaneUSDPerHour)
	var message string
	switch {
	case !now.Before(ends):
		message = fmt.Sprintf("Kubernetes %s has been in EKS extended support since %s: %s", v, day, price)
	case ends.Sub(now) <= SupportWarningDays*24*time.Hour:
		message = fmt.Sprintf("Kubernetes %s leaves EKS standard support on %s, in %d days: from then %s", v, day, int(math.Ceil(ends.Sub(now).Hours()/24)), price)
	case !spec.ExpiresAt().IsZero() && spec.ExpiresAt().After(ends):
		message = fmt.Sprintf("Kubernetes %s leaves EKS standard support on %s, before the stack's expiry %s: from then %s", v, day, spec.Expiry, price)
	default:
		return
	}
	spec.Warnings = append(spec.Warnings, ConfigError{File: st.File, Line: st.versionLine, Key: KeyKubernetesVersion, Message: message,
		Fix: fmt.Sprintf("set %s to %s (standard support until %s)", KeyKubernetesVersion, DefaultKubernetesVersion, StandardSupportEnds(DefaultKubernetesVersion).Format(time.DateOnly))})
}
