"""A made-up service graph, as a new user's first memory would hold it: 32 entities whose names are mostly
hyphenated and mentioned in each other's observations, so their words are in many entities."""

SERVICES = [
    ("checkout-api", "service", [
        "Takes the cart from web-frontend and creates an order in orders",
        "Calls payments-api to authorise the card before confirming the order",
        "Written in Go; deployed by deploy-pipeline to the main Kubernetes cluster",
    ]),
    ("orders", "service", [
        "Owns the order lifecycle: created, paid, shipped, cancelled",
        "Stores orders in postgres-primary; reads go to postgres-replica",
        "Publishes order events to kafka-main for email-worker and loyalty-points",
    ]),
    ("payments-api", "service", [
        "Authorises and captures card payments through the acquirer for checkout-api",
        "Keeps idempotency keys in redis-cache for 24 hours",
        "Asks fraud-check for a score before every capture",
    ]),
    ("postgres-primary", "database", [
        "Primary Postgres 15 instance for orders, inventory-service and payments-api",
        "Nightly backups to object-storage at 02:00 UTC",
        "Failover to postgres-replica is manual and needs Marco",
    ]),
    ("postgres-replica", "database", [
        "Streaming replica of postgres-primary, read-only",
        "Used by reporting-worker and by the orders read path",
    ]),
    ("redis-cache", "cache", [
        "Shared Redis 7 for checkout-api sessions, api-gateway rate limits and payments-api idempotency keys",
        "Evicts with allkeys-lru at 8 GB",
    ]),
    ("kafka-main", "queue", [
        "The main Kafka cluster, three brokers",
        "Topics: order events from orders, inventory changes from inventory-service, email requests for email-worker",
    ]),
    ("web-frontend", "service", [
        "Next.js storefront served from the CDN",
        "Talks to checkout-api, catalog-service and auth-service through api-gateway",
    ]),
    ("api-gateway", "service", [
        "Envoy in front of checkout-api, payments-api, catalog-service and orders",
        "Terminates TLS and enforces rate limits kept in redis-cache",
    ]),
    ("catalog-service", "service", [
        "Serves product data and prices to web-frontend and checkout-api",
        "Rebuilds its listing every hour from inventory-service changes on kafka-main",
    ]),
    ("inventory-service", "service", [
        "Tracks stock per warehouse in postgres-primary",
        "Reserves stock when checkout-api creates an order in orders",
    ]),
    ("email-worker", "worker", [
        "Sends order confirmation and shipping emails for orders",
        "Consumes email requests from kafka-main",
    ]),
    ("reporting-worker", "worker", [
        "Builds the daily sales report from postgres-replica",
        "Runs at 06:00 UTC as a CronJob; counts orders by region",
    ]),
    ("shipping-service", "service", [
        "Books couriers and tracks parcels",
        "Marks an order shipped in orders when the courier scans it",
    ]),
    ("auth-service", "service", [
        "Issues session tokens for web-frontend and the mobile app",
        "Passwords hashed with argon2id; sessions kept in redis-cache",
    ]),
    ("search-indexer", "worker", [
        "Feeds catalog-service changes into the product search cluster",
        "Lags up to five minutes behind catalog-service",
    ]),
    ("fraud-check", "service", [
        "Scores each payment before payments-api captures it",
        "Blocks orders above the risk threshold of 0.8 and tells checkout-api why",
    ]),
    ("feature-flags", "service", [
        "Unleash instance holding every feature flag",
        "Flags are cached by api-gateway for 30 seconds",
    ]),
    ("object-storage", "storage", [
        "S3 bucket for postgres-primary backups, invoices and product images",
    ]),
    ("grafana", "tool", [
        "Dashboards for checkout-api, orders and payments-api; alerts page the on-call engineer",
    ]),
    ("Priya", "person", [
        "Owns checkout-api and payments-api",
        "Prefers small pull requests; reviews orders changes too",
    ]),
    ("Marco", "person", [
        "Runs the database on-call for postgres-primary and postgres-replica",
    ]),
    ("deploy-pipeline", "tool", [
        "GitHub Actions builds checkout-api, orders and every other service and deploys with Argo CD",
        "Deploys to production need one approval",
    ]),
    ("rate-limits", "convention", [
        "Public endpoints behind api-gateway allow 100 requests per minute per client",
    ]),
    ("invoice-generator", "worker", [
        "Renders PDF invoices for paid orders and stores them in object-storage",
    ]),
    ("loyalty-points", "service", [
        "Adds points to a customer account when orders says an order is paid",
    ]),
    ("config_loader", "library", [
        "Reads checkout-api and orders configuration from environment variables and vault",
    ]),
    ("metricsExporter", "library", [
        "Exports Prometheus metrics from checkout-api, payments-api and every other Go service",
    ]),
    ("v2.billing.sync", "job", [
        "Copies billing records from payments-api to the finance warehouse every night",
    ]),
    ("notification-hub", "service", [
        "Fans out push notifications from orders to the mobile app",
    ]),
    ("postgres", "convention", [
        "New services use postgres-primary unless Marco agrees otherwise",
    ]),
    ("checkout-api-v2", "service", [
        "The rewrite of checkout-api in Kotlin, behind the checkout_v2 flag in feature-flags",
    ]),
]


def entities() -> list[dict]:
    "The graph as create_entities takes it."
    return [{"name": name, "entityType": entity_type, "observations": observations} for name, entity_type, observations in SERVICES]
