package dev.settle.agent.tools;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * The demo tool {@code send_receipt} ({@code SETTLE_DEMO_*}); see docs/TOOLS.md.
 *
 * @param receiptUrl          where receipts are POSTed ({@code SETTLE_DEMO_RECEIPTURL}); unset or blank = the tool
 *                            is not offered to the model
 * @param receiptTimeout      connecting, and the wait for the answer, each end within it; else the call failed
 * @param receiptAllowprivate allow a receipt service in loopback, private, link-local, CGNAT networks
 *                            ({@code SETTLE_DEMO_RECEIPTALLOWPRIVATE}), as {@code SETTLE_WEBHOOK_ALLOWPRIVATE} does
 *                            for webhooks
 */
@ConfigurationProperties("settle.demo")
public record ReceiptSettings(String receiptUrl, @DefaultValue("10s") Duration receiptTimeout,
                              @DefaultValue("false") boolean receiptAllowprivate) {
    public ReceiptSettings {
        if (receiptTimeout.isNegative() || receiptTimeout.isZero()) {
            throw new IllegalStateException("SETTLE_DEMO_RECEIPTTIMEOUT (settle.demo.receipt-timeout) must be positive");
        }
    }
}
