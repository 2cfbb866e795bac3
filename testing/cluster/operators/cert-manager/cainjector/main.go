// Command cert-manager-cainjector runs cert-manager's CA injector (the public package pkg/controller/cainjector) on
// a controller-runtime manager of ours: cert-manager's own main package lives in a module the Go module proxy does
// not serve (.../cainjector-binary). It accepts the flags the cert-manager chart gives its cainjector container.
package main

import (
	"flag"
	"fmt"
	"os"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
)

func main() {
	klog.InitFlags(nil) // --v, as the chart sets it
	// --kubeconfig is controller-runtime's own flag, read by ctrl.GetConfig (empty: the in-cluster configuration).
	namespace := flag.String("namespace", "", "inject into, and read sources from, this namespace only; empty: all")
	metrics := flag.String("metrics-listen-address", "0", "the metrics listener's address; 0: none")
	// Given by the chart, without effect here: one replica runs without leader election.
	flag.String("leader-election-namespace", "", "accepted, without effect (no leader election)")
	flag.Parse()
	if err := run(*namespace, *metrics); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		klog.Flush()
		os.Exit(1)
	}
}

func run(namespace, metrics string) error {
	ctrl.SetLogger(klog.Background())
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	restConfig.UserAgent = "cert-manager-cainjector"

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(admissionv1.AddToScheme(scheme))
	utilruntime.Must(apiextv1.AddToScheme(scheme))
	utilruntime.Must(apiregv1.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))

	options := ctrl.Options{
		Scheme:                 scheme,
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: metrics},
		HealthProbeBindAddress: "0",
		// Secrets are watched as metadata only; their data is read from the API server when injected.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	}
	if namespace != "" {
		// Only that namespace's sources are read, as cert-manager's cainjector does with --namespace.
		options.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}}
	}
	mgr, err := ctrl.NewManager(restConfig, options)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    namespace,
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
