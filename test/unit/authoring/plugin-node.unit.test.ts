// Invariant: a `plugin` node of a v2 definition validates only with a well-formed `<pluginId>.<verbId>` verb and
// compiles into the agent node a run dispatches, with the verb, its options and any instructions in the prompt and
// workType `plugin`; a canvas node `plugin:<p>.<v>` stands for exactly that definition node.
import { expect } from 'chai';
import { analyseDefinition } from '../../../actors/kinds/workflow/definition.js';
import { definitionOf } from '../../../actors/kinds/authoring/plan.js';
import { pluginNodeKey, pluginVerbOf } from '../../../actors/kinds/authoring/vocabulary.js';

const definition = (node: Record<string, unknown>) => JSON.stringify({
  schemaVersion: 'v2', name: 'p', trigger: { type: 'manual' }, nodes: [{ id: 'deploy', kind: 'plugin', ...node }], edges: [],
});

describe('authoring: plugin node kind', () => {
  it('compiles a plugin node into an agent dispatch naming the verb and options', () => {
    const { plan } = analyseDefinition(definition({ verb: 'com.acme.deploy.run', options: { env: 'staging' }, prompt: 'Be careful' }));
    expect(plan.nodes[0]).to.deep.equal({
      id: 'deploy', kind: 'agent', workType: 'plugin',
      prompt: "Run the plugin verb 'run' of plugin 'com.acme.deploy' (com.acme.deploy.run).\nOptions (JSON): {\"env\":\"staging\"}\n\nBe careful",
    });
  });

  it('refuses a verb without a plugin, an unknown member, and a missing verb, naming the field', () => {
    for (const [node, field] of [
      [{ verb: 'run' }, 'definitionYaml.nodes.0.verb'],
      [{ verb: 'a.b', tools: [] }, 'definitionYaml.nodes.0.tools'],
      [{}, 'definitionYaml.nodes.0.verb'],
    ] as const) {
      expect(() => analyseDefinition(definition(node))).to.throw().with.property('details').that.deep.equals({ field });
    }
  });

  it('maps canvas keys and definition verbs both ways, leaving out ids it cannot split', () => {
    expect(pluginNodeKey('com.acme.deploy', 'run')).to.equal('plugin:com.acme.deploy.run');
    expect(pluginNodeKey('deploy', 'run.fast')).to.equal(undefined);
    expect(pluginVerbOf('plugin:com.acme.deploy.run')).to.equal('com.acme.deploy.run');
    expect(pluginVerbOf('agent')).to.equal(undefined);
    const def = definitionOf({ name: 'n', description: '', nodes: [{ id: 'x', nodeKey: 'plugin:lint.check', config: { options: {} } }], edges: [] });
    expect(def.nodes).to.deep.equal([{ options: {}, id: 'x', kind: 'plugin', verb: 'lint.check' }]);
  });
});
