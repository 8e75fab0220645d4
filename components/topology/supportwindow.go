package topology

import (
	"fmt"
	"math"
	"time"
)

// SupportWarningDays is how far ahead the end of a version's standard support is warned of.
const SupportWarningDays = 30

// checkSupportWindow looks at the day the version leaves EKS standard support, from the
// kubernetesVersion line. Under EXTENDED (EKS's default) EKS bills extended support from that
// day, unasked, and only an upgrade brings the price back: a warning when that is now, within
// SupportWarningDays, or before the stack's expiry. Under STANDARD EKS upgrades the cluster that
// day: a warning before it, and an error after, since the stack file would then name an older
// version than the cluster runs and `pulumi up` would try to downgrade it.
func checkSupportWindow(spec *StackSpec, st Stack, now time.Time) error {
	ends := StandardSupportEnds(spec.Cluster.KubernetesVersion)
	if ends.IsZero() {
		return nil
	}
	v, day := spec.Cluster.KubernetesVersion, ends.Format(time.DateOnly)
	next := nextInStandardSupport(v, now)
	fix := fmt.Sprintf("set %s to %s (standard support until %s)", KeyKubernetesVersion, DefaultKubernetesVersion, StandardSupportEnds(DefaultKubernetesVersion).Format(time.DateOnly))
	standard := spec.Cluster.UpgradePolicy == UpgradePolicyStandard
	price := fmt.Sprintf("the control plane costs $%.2f per hour instead of $%.2f", EKSExtendedSupportUSDPerHour, EKSControlPlaneUSDPerHour)
	if standard {
		price = fmt.Sprintf("EKS upgrades the cluster to the next version in standard support (%s %s), and the stack file must follow", KeyUpgradePolicy, UpgradePolicyStandard)
	}
	var message string
	switch {
	case !now.Before(ends) && standard:
		return ConfigErrors{{File: st.File, Line: st.versionLine, Key: KeyKubernetesVersion,
			Message: fmt.Sprintf("Kubernetes %s left EKS standard support on %s: under %s %s EKS upgrades the cluster to %s, and `pulumi up` would try to downgrade it", v, day, KeyUpgradePolicy, UpgradePolicyStandard, next),
			Fix: fmt.Sprintf("set %s to %s or newer, or set %s to %s (extended support, $%.2f per hour)",
				KeyKubernetesVersion, next, KeyUpgradePolicy, UpgradePolicyExtended, EKSExtendedSupportUSDPerHour)}}
	case !now.Before(ends):
		message = fmt.Sprintf("Kubernetes %s has been in EKS extended support since %s: %s", v, day, price)
	case ends.Sub(now) <= SupportWarningDays*24*time.Hour:
		message = fmt.Sprintf("Kubernetes %s leaves EKS standard support on %s, in %d days: from then %s", v, day, int(math.Ceil(ends.Sub(now).Hours()/24)), price)
	case !spec.ExpiresAt().IsZero() && spec.ExpiresAt().After(ends):
		message = fmt.Sprintf("Kubernetes %s leaves EKS standard support on %s, before the stack's expiry %s: from then %s", v, day, spec.Expiry, price)
	default:
		return nil
	}
	spec.Warnings = append(spec.Warnings, ConfigError{File: st.File, Line: st.versionLine, Key: KeyKubernetesVersion, Message: message, Fix: fix})
	return nil
}

// nextInStandardSupport is the oldest accepted version newer than v still in standard support
// at now, or the default version.
func nextInStandardSupport(v string, now time.Time) string {
	m := versionPattern.FindStringSubmatch(v)
	for _, minor := range kubernetesMinors() {
		next := fmt.Sprintf("1.%d", minor)
		if m != nil && minor > atoi(m[1]) && now.Before(StandardSupportEnds(next)) {
			return next
		}
	}
	return DefaultKubernetesVersion
}
