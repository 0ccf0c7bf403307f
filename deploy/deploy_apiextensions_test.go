//go:build apiextensions

// With k8s.io/apiextensions-apiserver in go.mod, `go test -tags
// apiextensions ./deploy` also decodes the CRDs strictly into the real
// apiextensions.k8s.io/v1 type and runs the API server's own CRD validation
// (structural schema, defaults, names) on them.
package deploy

import (
	"context"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
)

func init() {
	schemeAdders = append(schemeAdders, func(s *runtime.Scheme) error { install.Install(s); return nil })
	crdValidators = append(crdValidators, validateCRD)
}

// validateCRD does what the API server does with a new CRD: default it,
// convert it to the internal version, and validate it.
func validateCRD(obj runtime.Object) error {
	s := runtime.NewScheme()
	install.Install(s)
	v1 := obj.(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
	s.Default(v1)
	var internal apiextensions.CustomResourceDefinition
	if err := s.Convert(v1, &internal, nil); err != nil {
		return err
	}
	for _, v := range internal.Spec.Versions {
		if v.Storage {
			internal.Status.StoredVersions = []string{v.Name}
		}
	}
	return validation.ValidateCustomResourceDefinition(context.Background(), &internal).ToAggregate()
}
