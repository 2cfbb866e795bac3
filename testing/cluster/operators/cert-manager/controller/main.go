// Command cert-manager-controller runs cert-manager's certificate, issuer and SelfSigned/CA CertificateRequest
// controllers, from cert-manager's public packages (pkg/controller and the packages that register themselves
// there): cert-manager's own main package lives in a module the Go module proxy does not serve
// (.../controller-binary). It accepts the flags the cert-manager chart gives its controller container.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Controllers register themselves with controllerpkg.Register in init(). The approver approves every
	// CertificateRequest of the issuers below: without it nothing is signed.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// Issuer implementations register themselves with issuer.RegisterIssuer in init(). ACME, Vault and Venafi are
	// left out: the collection's issuers are SelfSigned and CA, and Venafi's client module is refused by the proxy.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	klog.InitFlags(nil) // --v, as the chart sets it
	kubeconfig := flag.String("kubeconfig", "", "a kubeconfig; empty: the in-cluster configuration")
	master := flag.String("master", "", "the API server's address (overrides the kubeconfig's)")
	namespace := flag.String("namespace", "", "the namespace to watch; empty: all")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager",
		"the namespace of the Secrets ClusterIssuers refer to")
	workers := flag.Int("concurrent-workers", 5, "workers per controller")
	// Given by the chart, without effect here: one replica runs without leader election, and no ACME issuer runs.
	flag.String("leader-election-namespace", "", "accepted, without effect (no leader election)")
	flag.String("acme-http01-solver-image", "", "accepted, without effect (no ACME issuer)")
	flag.Int("max-concurrent-challenges", 0, "accepted, without effect (no ACME issuer)")
	flag.Parse()

	if err := run(*master, *kubeconfig, *namespace, *clusterResourceNamespace, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		klog.Flush()
		os.Exit(1)
	}
}

func run(master, kubeconfig, namespace, clusterResourceNamespace string, workers int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// After the first signal the default handling is back: a second one ends a shutdown that hangs.
	go func() { <-ctx.Done(); stop() }()
	log := klog.Background().WithName("cert-manager")
	ctx = logf.NewContext(ctx, log)

	// cert-manager's controller flag defaults.
	opts := controllerpkg.ContextOptions{
		APIServerHost:      master,
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		Namespace:          namespace,
		IssuerOptions: controllerpkg.IssuerOptions{
			ClusterResourceNamespace:        clusterResourceNamespace,
			ClusterIssuerAmbientCredentials: true,
		},
		CertificateOptions: controllerpkg.CertificateOptions{
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	}
	factory, err := controllerpkg.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	shared, err := factory.Build()
	if err != nil {
		return err
	}

	names := make([]string, 0, len(controllerpkg.Known()))
	for name := range controllerpkg.Known() {
		names = append(names, name)
	}
	sort.Strings(names)

	group, groupCtx := errgroup.WithContext(ctx)
	for _, name := range names {
		// Constructing a controller registers the informers it needs with the shared factories.
		controller, err := controllerpkg.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("constructing controller %q: %w", name, err)
		}
		log.Info("starting controller", "controller", name)
		group.Go(func() error { return controller.Run(workers, groupCtx) })
	}

	// The informers start once every controller asked for the ones it needs.
	shared.KubeSharedInformerFactory.Start(groupCtx.Done())
	shared.SharedInformerFactory.Start(groupCtx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(groupCtx.Done())

	err = group.Wait()
	shared.KubeSharedInformerFactory.Shutdown()
	shared.SharedInformerFactory.Shutdown()
	shared.HTTP01ResourceMetadataInformersFactory.Shutdown()
	if ctx.Err() != nil {
		// Stopped by a signal: the controllers' errors (caches that never synced) are the stop's, not failures.
		return nil
	}
	return err
}
