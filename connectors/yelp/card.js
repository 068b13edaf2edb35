// Yelp's cards in the browser UI (docs/connectors.md, "The UI card"): businesses with
// their rating, price, address and opening state, and up to three reviews.

export default function yelpCard(ui) {
  const { h, asList, asText, isObject, count, formatDate, link, safeImage, safeUrl } = ui;

  function stars(rating) {
    const value = typeof rating === "number" ? Math.max(0, Math.min(5, rating)) : 0;
    const el = h("span", { class: "stars", role: "img", "aria-label": `Rated ${value} out of 5` },
      h("span", { class: "stars-fill", "aria-hidden": "true", text: "★★★★★" }),
      h("span", { class: "stars-empty", "aria-hidden": "true", text: "★★★★★" }));
    el.style.setProperty("--rating", String(value / 5));
    return el;
  }

  function businesses(list) {
    const items = asList(list).filter(isObject);
    if (!items.length) return h("p", { class: "muted", text: "No places found." });
    return h("ul", { class: "business-grid" }, items.map((b) => {
      const image = safeImage(b.image_url);
      const hours = asList(b.business_hours).find(isObject);
      const open = b.is_closed ? "Closed permanently"
        : hours && typeof hours.is_open_now === "boolean" ? (hours.is_open_now ? "Open now" : "Closed now")
          : "";
      return h("li", { class: "business" },
        image ? thumbnail(image, asText(b.name)) : placeholder(asText(b.name)),
        h("div", { class: "business-info" },
          h("h4", {}, link(b.url, asText(b.name))),
          h("p", { class: "rating-line" }, stars(b.rating),
            h("span", { class: "rating-number", text: typeof b.rating === "number" ? b.rating.toFixed(1) : "" }),
            h("span", { class: "muted", text: b.review_count ? `(${count(b.review_count)})` : "" }),
            b.price ? h("span", { class: "price", text: asText(b.price) }) : null),
          h("p", { class: "muted small", text: asList(b.categories).map((c) => asText(c?.title ?? c)).join(", ") }),
          h("p", { class: "small", text: asList(b.location?.display_address).map(asText).join(", ") }),
          h("p", { class: "small" },
            b.display_phone ? h("span", { text: asText(b.display_phone) }) : null,
            open ? h("span", { class: `open-state ${open === "Open now" ? "open" : "closed"}`, text: open }) : null)));
    }));
  }

  function placeholder(name) {
    const initials = name.split(/\s+/).filter((w) => /^[\p{L}\p{N}]/u.test(w)).slice(0, 2).map((w) => w[0]).join("").toUpperCase();
    return h("span", { class: "thumb-placeholder", "aria-hidden": "true", text: initials });
  }

  function thumbnail(src, name) {
    const img = h("img", { src, alt: "", loading: "lazy", referrerpolicy: "no-referrer" });
    img.addEventListener("error", () => img.replaceWith(placeholder(name)), { once: true });
    return img;
  }

  function reviews(list) {
    const items = asList(list).filter(isObject).slice(0, 3);
    if (!items.length) return h("p", { class: "muted", text: "No reviews yet." });
    return h("ul", { class: "reviews" }, items.map((r) => h("li", { class: "review" },
      h("p", { class: "review-head" },
        h("strong", { text: asText(r.user?.name) || "A Yelp user" }), stars(r.rating),
        h("span", { class: "muted small", text: formatDate(asText(r.time_created).slice(0, 10), { withYear: true }) })),
      h("blockquote", { class: "pre-wrap", text: asText(r.text) }),
      safeUrl(r.url) ? h("p", { class: "small" }, link(r.url, "Read on Yelp")) : null)));
  }

  return {
    renderers: {
      yelp_search_results: businesses,
      yelp_reviews: reviews,
    },
  };
}
