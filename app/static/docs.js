// /docs: Swagger UI (vendored, app/static/vendor/swagger-ui) on this server's /openapi.json.
// A file, not an inline script: the page's policy allows scripts from 'self' only.
const root = document.getElementById("swagger-ui");
window.ui = window.SwaggerUIBundle({
  url: root.dataset.url,
  domNode: root,
  deepLinking: true,
  // Requests made with "Try it out" carry the token given under "Authorize".
  persistAuthorization: false,
  presets: [window.SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
  // Never ask an outside validator about the document (no requests leave this origin).
  validatorUrl: null,
});
