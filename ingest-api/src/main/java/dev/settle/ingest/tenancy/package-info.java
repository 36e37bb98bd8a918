/** The admin API: tenants, their settings and their API keys (which {@code http} asks through {@code TenantKeys}). */
package dev.settle.ingest.tenancy;
