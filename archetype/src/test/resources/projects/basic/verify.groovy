// Runs after the generated project's `verify`: its JAR is what handlers/ takes. It holds the handler and not
// idem-api (provided, so never bundled: a second dev.idem.api would make the runtime refuse the class).
import java.util.jar.JarFile

def projectDir = context.projectDir   // the generated project's folder
def jar = new File(projectDir, 'target/order-confirmations-1.0.0-SNAPSHOT.jar')
assert jar.isFile() : "no JAR at ${jar}"
def entries = new JarFile(jar).withCloseable { it.entries().collect { it.name } }
assert entries.contains('com/example/shop/orders/OrderConfirmationHandler.class') : "handler class missing: ${entries}"
assert !entries.any { it.startsWith('dev/idem/') } : "idem-api is bundled: ${entries.findAll { it.startsWith('dev/idem/') }}"
assert !entries.any { it.contains('Test') } : "test classes in the JAR: ${entries}"
def reports = new File(projectDir, 'target/surefire-reports').listFiles().findAll { it.name.endsWith('.xml') }
def ran = reports.sum { ((it.text =~ /<testsuite[^>]* tests="(\d+)"/)[0][1]) as int } ?: 0
assert ran > 0 : 'the generated project ran no test'
return true
