package deploy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// access is a request of the agent's ServiceAccount; namespace "" is a
// cluster-wide request (a list or watch across namespaces, or a
// cluster-scoped resource).
type access struct {
	verb, group, resource, namespace string
	// name is the object's name: a get's, or a list's or watch's
	// field selector metadata.name=NAME (the API server authorizes such a
	// list or watch as a request for that name); "" for a request of every
	// object.
	name string
}

// exampleSecret is the Secret example-bgppeer.yaml references, the one
// name the default Role grants.
const exampleSecret = "bgp-passwords"

// allowed evaluates the RBAC objects of deploy/ the way the API server's
// RBAC authorizer does, for the agent's ServiceAccount.
func allowed(ms []manifest, a access) bool {
	roles := map[string][]rbacv1.PolicyRule{} // "ClusterRole/name" or "Role/ns/name"
	for _, r := range all[*rbacv1.ClusterRole](ms) {
		roles["ClusterRole/"+r.Name] = r.Rules
	}
	for _, r := range all[*rbacv1.Role](ms) {
		roles["Role/"+r.Namespace+"/"+r.Name] = r.Rules
	}
	ruleAllows := func(key string) bool {
		return slices.ContainsFunc(roles[key], func(r rbacv1.PolicyRule) bool {
			return matches(r.Verbs, a.verb) && matches(r.APIGroups, a.group) &&
				matches(r.Resources, a.resource) &&
				(len(r.ResourceNames) == 0 || a.name != "" && slices.Contains(r.ResourceNames, a.name))
		})
	}
	for _, b := range all[*rbacv1.ClusterRoleBinding](ms) {
		if bindsAgent(b.Subjects) && b.RoleRef.Kind == "ClusterRole" && ruleAllows("ClusterRole/"+b.RoleRef.Name) {
			return true
		}
	}
	for _, b := range all[*rbacv1.RoleBinding](ms) {
		if !bindsAgent(b.Subjects) || a.namespace != b.Namespace {
			continue
		}
		key := "ClusterRole/" + b.RoleRef.Name
		if b.RoleRef.Kind == "Role" {
			key = "Role/" + b.Namespace + "/" + b.RoleRef.Name
		}
		if ruleAllows(key) {
			return true
		}
	}
	return false
}

func matches(list []string, v string) bool {
	return slices.Contains(list, v) || slices.Contains(list, "*")
}

func bindsAgent(subjects []rbacv1.Subject) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == "ServiceAccount" && s.Name == serviceAccount && s.Namespace == agentNamespace
	})
}

var readVerbs = []string{"get", "list", "watch"}

func TestRBACAccess(t *testing.T) {
	ms := loadManifests(t)
	type accessCase struct {
		name string
		req  access
		want bool
	}
	var cases []accessCase
	// Everything the agent reads, in every read verb.
	for _, group := range []string{"crd.projectcalico.org", "projectcalico.org"} {
		for _, res := range []string{"bgppeers", "bgpconfigurations", "bgpfilters", "blockaffinities", "ippools"} {
			for _, verb := range readVerbs {
				cases = append(cases, accessCase{
					kebab(verb, res, group), access{verb, group, res, "", ""}, true})
			}
		}
	}
	for _, verb := range readVerbs {
		cases = append(cases,
			accessCase{kebab(verb, "nodes"), access{verb, "", "nodes", "", ""}, true},
			accessCase{kebab(verb, "the-example-secret"), access{verb, "", "secrets", secretsNamespace, exampleSecret}, true},
			accessCase{kebab("no", verb, "other-secrets-in-secrets-namespace"), access{verb, "", "secrets", secretsNamespace, "calicovpp-ipsec-psk"}, false},
			accessCase{kebab("no", verb, "every-secret-in-secrets-namespace"), access{verb, "", "secrets", secretsNamespace, ""}, false})
	}
	for _, verb := range []string{"list", "watch"} {
		cases = append(cases, accessCase{kebab(verb, "pods"), access{verb, "", "pods", "", ""}, true},
			accessCase{kebab(verb, "services"), access{verb, "", "services", "", ""}, true},
			accessCase{kebab(verb, "endpointslices"), access{verb, "discovery.k8s.io", "endpointslices", "", ""}, true})
	}
	// What --report-status writes (watch/status), in both groups.
	for _, group := range []string{"crd.projectcalico.org", "projectcalico.org"} {
		for _, verb := range append(readVerbs, "update") {
			cases = append(cases, accessCase{kebab(verb, "caliconodestatuses", group), access{verb, group, "caliconodestatuses", "", ""}, true})
		}
		cases = append(cases,
			accessCase{kebab("update-caliconodestatuses-status", group), access{"update", group, "caliconodestatuses/status", "", ""}, true},
			accessCase{kebab("no-create-caliconodestatuses", group), access{"create", group, "caliconodestatuses", "", ""}, false},
			accessCase{kebab("no-delete-caliconodestatuses", group), access{"delete", group, "caliconodestatuses", "", ""}, false},
			accessCase{kebab("no-patch-caliconodestatuses", group), access{"patch", group, "caliconodestatuses", "", ""}, false})
	}
	for _, ns := range []string{"", "default", secretsNamespace} {
		for _, verb := range []string{"create", "patch"} {
			cases = append(cases, accessCase{kebab(verb, "events", ns), access{verb, "", "events", ns, ""}, true})
		}
	}
	cases = append(cases, []accessCase{
		{"no-delete-events", access{"delete", "", "events", "default", ""}, false},
		{"no-update-events", access{"update", "", "events", "default", ""}, false},
		{"no-list-events", access{"list", "", "events", "", ""}, false},
		{"no-events-k8s-io", access{"create", "events.k8s.io", "events", "default", ""}, false},
		{"no-create-bgppeers", access{"create", "crd.projectcalico.org", "bgppeers", "", ""}, false},
		{"no-update-bgppeers-v3", access{"update", "projectcalico.org", "bgppeers", "", ""}, false},
		{"no-delete-bgpfilters", access{"delete", "crd.projectcalico.org", "bgpfilters", "", ""}, false},
		{"no-patch-bgpconfigurations", access{"patch", "crd.projectcalico.org", "bgpconfigurations", "", ""}, false},
		{"no-update-bgppeers-status", access{"update", "crd.projectcalico.org", "bgppeers/status", "", ""}, false},
		{"no-other-calico-objects", access{"list", "crd.projectcalico.org", "ipamblocks", "", ""}, false},
		{"no-other-calico-objects-v3", access{"list", "projectcalico.org", "felixconfigurations", "", ""}, false},
		{"no-update-ippools", access{"update", "crd.projectcalico.org", "ippools", "", ""}, false},
		{"no-delete-blockaffinities-v3", access{"delete", "projectcalico.org", "blockaffinities", "", ""}, false},
		{"no-patch-nodes", access{"patch", "", "nodes", "", ""}, false},
		{"no-update-nodes-status", access{"update", "", "nodes/status", "", ""}, false},
		{"no-secrets-cluster-wide", access{"list", "", "secrets", "", ""}, false},
		{"no-secrets-in-kube-system", access{"get", "", "secrets", "kube-system", exampleSecret}, false},
		{"no-secrets-in-default", access{"watch", "", "secrets", "default", ""}, false},
		{"no-secrets-in-agent-namespace", access{"get", "", "secrets", agentNamespace, exampleSecret}, false},
		{"no-create-secrets-in-secrets-namespace", access{"create", "", "secrets", secretsNamespace, ""}, false},
		{"no-update-secrets-in-secrets-namespace", access{"update", "", "secrets", secretsNamespace, exampleSecret}, false},
		{"no-configmaps-in-secrets-namespace", access{"get", "", "configmaps", secretsNamespace, ""}, false},
		{"no-get-pods", access{"get", "", "pods", "", ""}, false},
		{"no-delete-pods", access{"delete", "", "pods", "", ""}, false},
		{"no-pods-exec", access{"create", "", "pods/exec", "", ""}, false},
		{"no-pods-log", access{"get", "", "pods/log", "", ""}, false},
		{"no-get-services", access{"get", "", "services", "", ""}, false},
		{"no-update-services-status", access{"update", "", "services/status", "", ""}, false},
		{"no-get-endpointslices", access{"get", "discovery.k8s.io", "endpointslices", "", ""}, false},
		{"no-endpoints", access{"list", "", "endpoints", "", ""}, false},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := allowed(ms, c.req); got != c.want {
				t.Errorf("%+v: allowed %v, want %v", c.req, got, c.want)
			}
		})
	}
}

func kebab(parts ...string) string {
	return strings.ReplaceAll(strings.Join(parts, "-"), ".", "-")
}

func TestRBACShape(t *testing.T) {
	ms := loadManifests(t)
	cases := []struct {
		name  string
		check func() error
	}{
		{"cluster-role-grants-only-get-list-watch-but-for-what-it-reports", func() error {
			var errs []error
			for _, r := range all[*rbacv1.ClusterRole](ms) {
				errs = append(errs, readOnly("ClusterRole "+r.Name, slices.DeleteFunc(slices.Clone(r.Rules), reportRule)))
				for _, rule := range r.Rules {
					if slices.Contains(rule.Resources, "secrets") {
						errs = append(errs, fmt.Errorf("ClusterRole %s grants secrets", r.Name))
					}
				}
			}
			return errors.Join(errs...)
		}},
		{"role-is-namespaced-and-limited-to-secrets", func() error {
			var errs []error
			roles := all[*rbacv1.Role](ms)
			if len(roles) != 1 {
				return fmt.Errorf("%d Roles, want 1", len(roles))
			}
			for _, r := range roles {
				if r.Namespace != secretsNamespace {
					errs = append(errs, fmt.Errorf("Role %s in namespace %q", r.Name, r.Namespace))
				}
				errs = append(errs, readOnly("Role "+r.Name, r.Rules))
				for _, rule := range r.Rules {
					if !slices.Equal(rule.APIGroups, []string{""}) || !slices.Equal(rule.Resources, []string{"secrets"}) {
						errs = append(errs, fmt.Errorf("Role %s: rule for %v %v, want core secrets only", r.Name, rule.APIGroups, rule.Resources))
					}
					if len(rule.ResourceNames) == 0 {
						errs = append(errs, fmt.Errorf("Role %s: a rule without resourceNames grants every Secret of %s", r.Name, r.Namespace))
					}
				}
			}
			return errors.Join(errs...)
		}},
		{"bindings-bind-the-service-account-to-existing-roles", func() error {
			var errs []error
			crbs, rbs := all[*rbacv1.ClusterRoleBinding](ms), all[*rbacv1.RoleBinding](ms)
			if len(crbs) != 1 || len(rbs) != 1 {
				return fmt.Errorf("%d ClusterRoleBindings and %d RoleBindings, want 1 and 1", len(crbs), len(rbs))
			}
			for _, b := range crbs {
				if !bindsAgent(b.Subjects) || len(b.Subjects) != 1 {
					errs = append(errs, fmt.Errorf("ClusterRoleBinding %s subjects %v", b.Name, b.Subjects))
				}
				if !slices.ContainsFunc(all[*rbacv1.ClusterRole](ms), func(r *rbacv1.ClusterRole) bool {
					return b.RoleRef == rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name}
				}) {
					errs = append(errs, fmt.Errorf("ClusterRoleBinding %s: no ClusterRole %+v", b.Name, b.RoleRef))
				}
			}
			for _, b := range rbs {
				if !bindsAgent(b.Subjects) || len(b.Subjects) != 1 {
					errs = append(errs, fmt.Errorf("RoleBinding %s subjects %v", b.Name, b.Subjects))
				}
				if !slices.ContainsFunc(all[*rbacv1.Role](ms), func(r *rbacv1.Role) bool {
					return r.Namespace == b.Namespace && b.RoleRef == rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name}
				}) {
					errs = append(errs, fmt.Errorf("RoleBinding %s: no Role %+v in %s", b.Name, b.RoleRef, b.Namespace))
				}
			}
			return errors.Join(errs...)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// readOnly reports rules that grant more than get, list and watch, or use
// wildcards or non-resource URLs.
// reportRule is one of the ClusterRole's write rules for what the agent
// reports (watch/status), exactly: update on CalicoNodeStatus (and its
// status) in the Calico groups, create and patch on core Events.
func reportRule(r rbacv1.PolicyRule) bool {
	calico := []string{"crd.projectcalico.org", "projectcalico.org"}
	switch {
	case slices.Equal(r.APIGroups, calico) && slices.Equal(r.Resources, []string{"caliconodestatuses"}):
		return slices.Equal(r.Verbs, []string{"get", "list", "watch", "update"})
	case slices.Equal(r.APIGroups, calico) && slices.Equal(r.Resources, []string{"caliconodestatuses/status"}):
		return slices.Equal(r.Verbs, []string{"update"})
	case slices.Equal(r.APIGroups, []string{""}) && slices.Equal(r.Resources, []string{"events"}):
		return slices.Equal(r.Verbs, []string{"create", "patch"})
	}
	return false
}

func readOnly(what string, rules []rbacv1.PolicyRule) error {
	var errs []error
	for _, r := range rules {
		for _, v := range r.Verbs {
			if !slices.Contains(readVerbs, v) {
				errs = append(errs, fmt.Errorf("%s grants %q", what, v))
			}
		}
		if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Resources, "*") || len(r.NonResourceURLs) > 0 {
			errs = append(errs, fmt.Errorf("%s: wildcard or non-resource rule %+v", what, r))
		}
	}
	return errors.Join(errs...)
}
