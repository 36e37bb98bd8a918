package dev.settle.contracts;

import org.apache.kafka.clients.admin.NewTopic;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.config.TopicBuilder;

/** Declares Settle's topics; every application imports it so that whichever starts first creates them. */
@Configuration(proxyBeanMethods = false)
public class Topology {
    @Bean
    NewTopic messageAcceptedTopic() {
        return TopicBuilder.name(Topics.MESSAGE_ACCEPTED)
                .partitions(Topics.PARTITIONS)
                .build();
    }

    @Bean
    NewTopic sessionReadyTopic() {
        return TopicBuilder.name(Topics.SESSION_READY)
                .partitions(Topics.PARTITIONS)
                .build();
    }
}
