/**
 * The HTTP layer every controller stands on: authentication by bearer key and the access rule of each handler
 * ({@link dev.settle.ingest.http.ApiSecurity}), refusals as RFC 9457 problem+json, checked JSON bodies, cursor
 * paging, the OpenAPI document. It depends on no other package of the API.
 */
package dev.settle.ingest.http;
