package dev.settle.agent.demo;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * The built-in demo ({@code SETTLE_DEMO_*}): a bookkeeping assistant with its tools, its system prompt and an
 * offline model; see docs/TOOLS.md.
 *
 * @param enabled             the demo is part of this deployment: the bookkeeping tools, the bookkeeping system
 *                            prompt (unless {@code settle.agent.system-prompt} is set) and the offline demo model
 *                            (when {@code settle.llm.url} is unset). False: no tool, a neutral system prompt, and
 *                            {@code settle.llm.url} is required
 * @param receiptUrl          where receipts are POSTed ({@code SETTLE_DEMO_RECEIPTURL}); unset or blank = the tool
 *                            is not offered to the model
 * @param receiptTimeout      connecting, and the wait for the answer, each end within it; else the call failed
 * @param receiptAllowprivate allow a receipt service in loopback, private, link-local, CGNAT networks
 *                            ({@code SETTLE_DEMO_RECEIPTALLOWPRIVATE}), as {@code SETTLE_WEBHOOK_ALLOWPRIVATE} does
 *                            for webhooks
 */
@ConfigurationProperties("settle.demo")
public record DemoSettings(
        @DefaultValue("true") boolean enabled,
        String receiptUrl,
        @DefaultValue("10s") Duration receiptTimeout,
        @DefaultValue("false") boolean receiptAllowprivate) {
    public DemoSettings {
        if (receiptTimeout.isNegative() || receiptTimeout.isZero()) {
            throw new IllegalStateException(
                    "SETTLE_DEMO_RECEIPTTIMEOUT (settle.demo.receipt-timeout) must be positive");
        }
    }
}
