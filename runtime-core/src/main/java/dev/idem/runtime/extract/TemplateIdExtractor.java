package dev.idem.runtime.extract;

import dev.idem.spi.IdExtractor;
import dev.idem.spi.InboundMessage;

/** Builds a key from a {@link Template}; see {@link TemplateIdExtractorProvider}. */
final class TemplateIdExtractor implements IdExtractor {

    private final String text;
    private final String[] literals;
    private final Template.Field[] fields;
    private final JsonLookup json;

    TemplateIdExtractor(String text, Template template) {
        this.text = text;
        this.literals = template.literals().toArray(String[]::new);
        this.fields = template.fields().toArray(Template.Field[]::new);
        this.json = template.pointers().isEmpty() ? null : new JsonLookup(template.pointers());
    }

    @Override
    public String extract(InboundMessage message) {
        String[] values = new String[fields.length];
        // Fields outside the payload first: a message that lacks one needs no JSON parsing at all.
        for (int i = 0; i < fields.length; i++) {
            if (fields[i] instanceof Template.Header header) {
                values[i] = Values.present(message.headers().get(header.name()));
            } else if (fields[i] instanceof Template.Attribute attribute) {
                values[i] = Values.present(attribute.read(message));
            } else {
                continue;
            }
            if (values[i] == null) {
                return null;
            }
        }
        if (json != null) {
            String[] found = json.find(message.payload());
            for (int i = 0; i < fields.length; i++) {
                if (fields[i] instanceof Template.Pointed pointed) {
                    values[i] = Values.present(found[pointed.slot()]);
                    if (values[i] == null) {
                        return null;
                    }
                }
            }
        }
        StringBuilder key = new StringBuilder(text.length() + 32);
        for (int i = 0; i < fields.length; i++) {
            key.append(literals[i]).append(values[i]);
        }
        return key.append(literals[fields.length]).toString();
    }

    @Override
    public String toString() {
        return "template " + text;
    }
}
